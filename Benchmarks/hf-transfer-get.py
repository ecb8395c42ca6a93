#!/usr/bin/env python3
"""Download one URL with hf_transfer, the way huggingface_hub drives it.

Usage: hf-transfer-get.py URL OUT MAX_FILES CHUNK_SIZE

hf_transfer.download(url, filename, max_files, chunk_size, parallel_failures=0, max_retries=0,
headers=None, callback=None) fetches the file in ranges of CHUNK_SIZE bytes, at most MAX_FILES
at once. It has no option for a CA file: run it with SSL_CERT_FILE pointing at one (its OpenSSL
reads that variable). An error raises, so the exit status is non-zero.
"""
import sys

import hf_transfer


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    url, out, max_files, chunk_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    hf_transfer.download(url=url, filename=out, max_files=max_files, chunk_size=chunk_size)


if __name__ == "__main__":
    main()
