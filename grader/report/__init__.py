"""What grading produces: Gradescope's results.json, a feedback text, the gradebook CSV and
the console table. Each module turns SubmissionResults into one of them and nothing else."""
