"""huggingface_hub, the Hub's own client, against Tests/HF/hub_server.py (HF_ENDPOINT), for haul's
tests: `download CACHE REPO [REVISION]` fetches a snapshot into CACHE as huggingface_hub does;
`offline CACHE REPO [REVISION]` finds the snapshot in CACHE with the network off
(HF_HUB_OFFLINE=1) and reads config.json through `hf_hub_download`; `tree CACHE` lists the
cache: every entry's path, kind (file or link), link target and content's SHA-256, as JSON.
`local DIR REPO [REVISION]` fetches the repository's tree into DIR (`snapshot_download(local_dir=)`);
`localtree DIR` lists such a tree as `tree` does, without the `.cache/` folder huggingface_hub
keeps in it.
"""
import hashlib
import json
import os
import sys


def tree(cache, local=False):
    entries = []
    for folder, directories, files in os.walk(cache):
        directories[:] = sorted(d for d in directories if d != ".locks" and not (local and folder == cache
                                                                                  and d == ".cache"))
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, cache)
            if relative.startswith(".locks") or name.endswith(".lock"):
                continue
            entry = {"path": relative, "kind": "link" if os.path.islink(path) else "file"}
            if os.path.islink(path):
                entry["target"] = os.readlink(path)
            with open(path, "rb") as f:
                entry["sha256"] = hashlib.sha256(f.read()).hexdigest()
            entries.append(entry)
    return entries


def main():
    command, cache = sys.argv[1], sys.argv[2]
    if command in ("tree", "localtree"):
        print(json.dumps(tree(cache, local=command == "localtree")))
        return
    repo = sys.argv[3]
    revision = sys.argv[4] if len(sys.argv) > 4 else None
    if command == "offline":
        os.environ["HF_HUB_OFFLINE"] = "1"
    from huggingface_hub import hf_hub_download, snapshot_download
    if command == "download":
        path = snapshot_download(repo, revision=revision, cache_dir=cache)
    elif command == "local":
        path = snapshot_download(repo, revision=revision, local_dir=cache)
    else:
        path = snapshot_download(repo, revision=revision, cache_dir=cache, local_files_only=True)
        config = hf_hub_download(repo, "config.json", revision=revision, cache_dir=cache)
        with open(config, "rb") as f:
            print(json.dumps({"snapshot": path, "config": hashlib.sha256(f.read()).hexdigest()}))
            return
    print(json.dumps({"snapshot": path}))


if __name__ == "__main__":
    main()
