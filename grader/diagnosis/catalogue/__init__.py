"""The catalogue of misconceptions (`misconceptions`) and the evidence that names one without a
trace: error patterns (`patterns`), known-buggy variants of the reference (`variants`) and
behaviour signatures (`signatures`)."""
