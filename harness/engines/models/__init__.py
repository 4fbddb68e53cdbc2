"""Model files: GGUF headers, chat templates, the download table and the model library."""
