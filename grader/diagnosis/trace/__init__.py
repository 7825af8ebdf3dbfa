"""Reading a student's trace: the tracer's documents validated into typed records (`documents`,
`parse`, `graph`), and what their dataflow says about the student's code: the line that made a
tensor (`locate`), which projection plays which role (`projection_roles`), what each constructor
statement created (`constructors`)."""
