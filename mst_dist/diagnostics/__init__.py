"""What a person watches: the dashboard page, static figures and the live progress line."""
