"""Records: each kind of notebook line declared once as a typed model, the one timestamp, and
the notebook that writes and reads them."""
