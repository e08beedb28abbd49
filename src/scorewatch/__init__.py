"""scorewatch: score AI agents' outputs with LLM judges and watch the scores in production."""
