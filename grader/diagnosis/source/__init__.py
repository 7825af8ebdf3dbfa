"""Reading the student's source code for the diagnosis: the lines the reports quote (`quotes`), the
constructors as source (`init_methods`), the names they assign (`attribute_names`), the keywords
they take (`keywords`) and sizes fixed in advance (`fixed_sizes`)."""
