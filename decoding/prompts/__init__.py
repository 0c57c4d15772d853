"""What the model is asked: prompt templates (``templates``), the one prompt builder every engine
uses (``plan``), and the source's token ids inside a prompt (``source_tokens``)."""
