"""Classroom integrations: nbgrader, Gradescope, the student bundle. Each grades through `grader.run`."""
