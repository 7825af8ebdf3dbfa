"""attention-kit's grader: loads submissions, runs them in a sandbox, grades them with hidden suites."""
