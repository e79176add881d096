"""The gateway logic; no gRPC, boto3 or HTTP imports here."""
