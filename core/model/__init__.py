"""The plain data every wing shares: messages, summary records, token counting."""
