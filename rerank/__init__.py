"""evenhand.rerank: scorer protocol and registry, scorers, reranker."""
