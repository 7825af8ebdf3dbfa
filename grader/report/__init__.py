"""Reports: results.json, feedback.html/.md per submission; gradebook.csv and summary.html per class.

Python decides what to say (message keys and parameters, in `messages`; the student's text kept
apart from the grader's words, in `text`) and computes what the pictures show (small view
dataclasses in `feedback`, `heatmaps`, `summary`); the catalogues say it, the templates lay it out
(`render`), `results_file` writes and reads results.json and `writers` writes the files.
"""
