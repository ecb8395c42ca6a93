"""A real S3 API for haul's tests: moto's server, started on 127.0.0.1 and a free port, with
authentication on (every request's SigV4 signature is checked by moto, through botocore), an IAM
user whose keys the tests sign with, and the objects the tests fetch:

- bucket `haul-test` (us-east-1):
  - `single.bin`: 3 MiB, single-part, with a SHA-256 checksum;
  - `plain/etag.bin`: 1 MiB + 1 byte, single-part, no checksum (its ETag is its MD5);
  - `multi.bin`: 3 parts of 5 MiB, 5 MiB and 1,000 bytes, with a SHA-256 checksum of its parts;
  - `dir name/a file (1).txt`: a key that needs escaping;
  - `many/00000` ... `many/01049`: 1,050 small objects (a listing of two pages);
  - `bad/../escape.txt` and `bad/ok.txt`: a key that would leave the directory, and one that does not;
- bucket `haul-west` in eu-west-1: `far.bin`, for the region redirect.

Prints one JSON line (port, keys, the objects' SHA-256 digests) once ready, then serves until
its standard input closes.
"""
import base64
import hashlib
import json
import os
import socket
import sys

import boto3
from moto.server import ThreadedMotoServer


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pattern(length, seed):
    block = hashlib.sha256(seed.encode()).digest() * 64
    return (block * (length // len(block) + 1))[:length]


def main():
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    root = dict(aws_access_key_id="root", aws_secret_access_key="root", region_name="us-east-1", endpoint_url=endpoint)
    iam = boto3.client("iam", **root)
    iam.create_user(UserName="haul")
    iam.put_user_policy(
        UserName="haul", PolicyName="s3",
        PolicyDocument=json.dumps({"Version": "2012-10-17",
                                   "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="haul")["AccessKey"]
    s3 = boto3.client("s3", **root)
    digests = {}

    def put(bucket, name, body, **extra):
        s3.put_object(Bucket=bucket, Key=name, Body=body, **extra)
        digests[f"{bucket}/{name}"] = hashlib.sha256(body).hexdigest()

    s3.create_bucket(Bucket="haul-test")
    put("haul-test", "single.bin", pattern(3 << 20, "single"), ChecksumAlgorithm="SHA256")
    put("haul-test", "plain/etag.bin", pattern((1 << 20) + 1, "etag"))
    put("haul-test", "dir name/a file (1).txt", b"escaped key\n")
    # Through moto's own backend, in this process: 1,050 signed PUTs over HTTP cost seconds of CPU.
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for index in range(1050):
        body = f"object {index}\n".encode()
        backend.put_object("haul-test", f"many/{index:05d}", body)
        digests[f"haul-test/many/{index:05d}"] = hashlib.sha256(body).hexdigest()
    put("haul-test", "bad/../escape.txt", b"must not leave the directory\n")
    put("haul-test", "bad/ok.txt", b"fine\n")
    parts = [pattern(5 << 20, "part1"), pattern(5 << 20, "part2"), pattern(1000, "part3")]
    upload = s3.create_multipart_upload(Bucket="haul-test", Key="multi.bin", ChecksumAlgorithm="SHA256")
    done = []
    for number, body in enumerate(parts, start=1):
        answer = s3.upload_part(Bucket="haul-test", Key="multi.bin", PartNumber=number, UploadId=upload["UploadId"],
                                Body=body, ChecksumAlgorithm="SHA256")
        done.append({"PartNumber": number, "ETag": answer["ETag"], "ChecksumSHA256": answer["ChecksumSHA256"]})
    s3.complete_multipart_upload(Bucket="haul-test", Key="multi.bin", UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": done})
    digests["haul-test/multi.bin"] = hashlib.sha256(b"".join(parts)).hexdigest()
    west = boto3.client("s3", **{**root, "region_name": "eu-west-1"})
    west.create_bucket(Bucket="haul-west", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    body = pattern(200_000, "far")
    west.put_object(Bucket="haul-west", Key="far.bin", Body=body)
    digests["haul-west/far.bin"] = hashlib.sha256(body).hexdigest()
    # From here on every request must be signed by a known key.
    import requests
    requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0").raise_for_status()
    print(json.dumps({"port": port, "accessKeyID": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"],
                      "sha256": digests}), flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
