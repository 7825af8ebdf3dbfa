"""The hidden suites: pytest tests (in `hidden/`) that compare a submission's probe outputs with the
reference's through one seam, the pytest plugin that runs them per submission, and their comparisons."""
