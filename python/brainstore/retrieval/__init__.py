"""Retrieval: chunking, the embedder, lexical and vector indexes, lanes and packing."""
