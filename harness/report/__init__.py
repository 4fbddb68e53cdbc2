"""What a person reads: the run report, charts and the single-user engine tables, built from
records only."""
