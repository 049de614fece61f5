"""What the model sees and when to summarize: the context engine and its policy."""
