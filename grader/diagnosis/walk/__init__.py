"""Walking the student's computation against the reference's: the chapter's pipeline stage by stage
with its known wrong ways (`pipeline`, `stages_to_weights`, `stages_after_weights`, `masks`), the
reference's checkpoints (`checkpoints`), and the recogniser (`recognise`) whose walk (`walker`,
helped by `search`, `sites`, `progress`, `dropout`, `fitted`, `copies`) finds where the student's
values first depart and why (`findings`), in any layout (`layout`)."""
