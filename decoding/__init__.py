"""evenhand.decoding: model loading, logits processors, beam search and generate()."""
