"""Reports: results.json, feedback.html/.md per submission; gradebook.csv and summary.html per class.

Python decides what to say (message keys and parameters, in `messages`; the student's text kept
apart from the grader's words, in `text`) and computes what the pictures show (small view
dataclasses in `feedback`, `heatmaps`, `summary`); the catalogues say it, the templates lay it out
(`render`) and `writers` writes the files.
"""
from grader.report.feedback import feedback_view, results_document
from grader.report.heatmaps import _grid_of_rows, heatmap_view
from grader.report.messages import error_message, misconception_card, outcome_message
from grader.report.render import _attention_grid, environment, render_feedback, render_summary
from grader.report.summary import class_view
from grader.report.writers import gradebook_csv, write_atomic, write_class_reports, write_submission_reports

__all__ = ["class_view", "environment", "error_message", "feedback_view", "gradebook_csv", "heatmap_view",
           "misconception_card", "outcome_message", "render_feedback", "render_summary", "results_document",
           "write_atomic", "write_class_reports", "write_submission_reports", "_attention_grid", "_grid_of_rows"]
