"""evenhand: fair, faithful and controllably abstractive summarization."""

__version__ = "0.1.0"
