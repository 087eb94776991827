"""The workers write a run's forest and labels as Parquet datasets, atomically.

A dataset appears only once every part is written (in a hidden directory
renamed into place, :func:`mst_dist.io.writers.atomic_dir`; for a URL, a
hidden prefix committed in place, :func:`mst_dist.io.urls.atomic_url_dir`):
a failed run leaves none.
"""
from __future__ import annotations

import operator

from mst_dist.engine.runs.solver import wait_on
from mst_dist.io import urls, writers
from mst_dist.phases import Step

#: Vertices per part of a labels dataset.
LABELS_PART_VERTICES = 1 << 24


def write_forest(client, builder, path, parts, rnd=0, storage_options=None):
    """One part file per chunk, from the futures of its forest rows (``parts[i]``, a list).

    Rows are sorted by edge id; the parts are in edge id order.  Returns
    ``(forest edges, total weight)``.
    """
    with writers.dataset_dir(path, storage_options) as tmp:
        futs = [client.submit(writers.write_forest_part, urls.join(tmp, writers.DATASET_PART.format(i)), *p,
                              key=builder.key(Step.WRITE_FOREST, rnd, i), pure=False)
                for i, p in enumerate(parts)]
        done = written(client, futs)
    return sum(n for n, _ in done), sum(t for _, t in done) if done else 0


def written(client, futures):
    """The results of the write tasks of a dataset (or a checkpoint's state), once every one has ended:
    where one fails, the others have stopped writing into its temporary directory before it is removed
    (``gather`` alone raises at the first failure, while the others may still be writing)."""
    wait_on(client, futures)
    return client.gather(futures)


def write_labels(client, builder, path, lab_f, n, storage_options=None):
    """The component labels (future of ``(labels, components)``) as parts of vertex ranges.

    Returns the number of components.
    """
    labels = client.submit(operator.getitem, lab_f, 0, key=builder.key(Step.LABELS_ARRAY, 0))
    step = max(1, min(n, LABELS_PART_VERTICES))
    with writers.dataset_dir(path, storage_options) as tmp:
        written(client, [client.submit(writers.write_labels_part, urls.join(tmp, writers.DATASET_PART.format(j)),
                                       labels, a, min(n, a + step), key=builder.key(Step.WRITE_LABELS, 0, j), pure=False)
                         for j, a in enumerate(range(0, max(n, 1), step))])
    return client.submit(operator.getitem, lab_f, 1, key=builder.key(Step.LABELS_COUNT, 0)).result()
