"""Headless Chromium driven over the DevTools protocol (tornado's websocket client).

``chromium --screenshot`` takes its picture when the page has loaded, before a
Bokeh server page has pulled its document over the websocket; driving the
browser lets a test wait until the figures are drawn, read values from the
page's own Bokeh document, and then take the screenshot.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.request

# the browser the package itself would use for its figures
from mst_dist.cli.report import chromium as chromium_path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0"]


class Chromium:
    """A headless Chromium process; ``with Chromium() as b: b.page(url)``."""

    def __init__(self, path=None):
        self.path = path or chromium_path()
        if self.path is None:
            raise FileNotFoundError("chromium is not installed (apt-get install chromium)")

    def __enter__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="mst-chromium-", ignore_cleanup_errors=True)
        self.proc = subprocess.Popen([self.path, *FLAGS, f"--user-data-dir={self._dir.name}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self._dir.name, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while True:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    lines = f.read().split()
                if lines:
                    self.port = int(lines[0])
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._dir.cleanup()

    def _target(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
            targets = json.load(r)
        return next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")

    def page(self, url, ready, probe=None, png=None, timeout=60.0, settle=1.0):
        """Load ``url``; wait until the JS expression ``ready`` is true; return ``probe``'s value.

        ``url=None`` stays on the page already open (to watch it change).
        ``png``: write a screenshot there once ready (after ``settle`` seconds
        for the last paint).
        """
        return asyncio.run(self._page(url, ready, probe, png, timeout, settle))

    async def _page(self, url, ready, probe, png, timeout, settle):
        from tornado.websocket import websocket_connect

        ws = await websocket_connect(self._target(), max_message_size=256 * 2**20)
        ids = iter(range(1, 1 << 30))

        async def call(method, **params):
            i = next(ids)
            ws.write_message(json.dumps({"id": i, "method": method, "params": params}))
            while True:
                msg = await ws.read_message()
                if msg is None:
                    raise RuntimeError("chromium closed the DevTools connection")
                msg = json.loads(msg)
                if msg.get("id") == i:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        async def evaluate(expr, strict=False):
            res = await call("Runtime.evaluate", expression=expr, returnByValue=True)
            if "exceptionDetails" in res:
                if strict:
                    raise RuntimeError(f"{expr}: {res['exceptionDetails']}")
                return None
            return res["result"].get("value")

        try:
            await call("Page.enable")
            if url is not None:
                await call("Page.navigate", url=url)
            deadline = time.monotonic() + timeout
            while not await evaluate(ready):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{url}: not ready after {timeout} s ({ready})")
                await asyncio.sleep(0.2)
            await asyncio.sleep(settle)
            value = await evaluate(probe, strict=True) if probe else None
            if png:
                shot = await call("Page.captureScreenshot", format="png")
                with open(png, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            return value
        finally:
            ws.close()
