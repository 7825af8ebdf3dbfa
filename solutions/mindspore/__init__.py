"""Reference solutions of the MindSpore track (exercise-api.md §4): the same seven modules as
``solutions``, written with MindSpore 2.10 (CPU, PyNative mode) as in the chapter's MindSpore port.

They reproduce the seeded CPU values of §4 under ``mindspore.set_seed`` and agree with the PyTorch
reference (better than 1e-6) whenever both get the same weights.
"""
