"""Rule, LLM and hybrid summaries, redaction and the trail-coverage check."""
