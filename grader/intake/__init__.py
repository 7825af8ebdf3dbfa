"""Intake: finding submissions on disk and reading them (modules and notebooks) into `Submission` records."""
