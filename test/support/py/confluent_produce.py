"""Produces records as real producers do, with Python's confluent-kafka and its schema-registry serializers.

Reads one JSON object on stdin:
  brokers, topic, partition (optional), format: avro | protobuf | json-schema | raw-avro | raw,
  registry (the registry's URL; not for raw-avro/raw), schema (Avro / JSON Schema text, or .proto text),
  message (protobuf: the message's name), subject_strategy (optional, avro: "topic_record"),
  registered (optional, protobuf: register the schema text as it is and serialize under that version),
  values (a Python expression: the list of values to send;
  datetime, date, time, timezone, timedelta, Decimal and UUID are in scope; raw: a list of hex strings).
Prints the number of records delivered.
"""
import importlib
import json
import os
import subprocess
import sys
import tempfile
from datetime import date, datetime, time, timedelta, timezone  # noqa: F401 (the values' scope)
from decimal import Decimal  # noqa: F401
from uuid import UUID  # noqa: F401

from confluent_kafka import Producer
from confluent_kafka.serialization import MessageField, SerializationContext

spec = json.load(sys.stdin)
values = eval(spec["values"])  # the test's own literal list
fmt = spec["format"]
topic = spec["topic"]
ctx = SerializationContext(topic, MessageField.VALUE)

if fmt in ("avro", "protobuf", "json-schema"):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    client = SchemaRegistryClient({"url": spec["registry"]})

# "topic_record": subjects named {topic}-{record full name} (several record types in one topic).
subject_conf = {}
if spec.get("subject_strategy") == "topic_record":
    from confluent_kafka.schema_registry import topic_record_subject_name_strategy

    subject_conf = {"subject.name.strategy": topic_record_subject_name_strategy}

if fmt == "avro":
    from confluent_kafka.schema_registry.avro import AvroSerializer

    serializer = AvroSerializer(client, spec["schema"], conf=subject_conf or None)
    serialize = lambda v: serializer(v, ctx)
elif fmt == "json-schema":
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    serializer = JSONSerializer(spec["schema"], client)
    serialize = lambda v: serializer(v, ctx)
elif fmt == "protobuf":
    from google.protobuf.json_format import ParseDict
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    workdir = tempfile.mkdtemp()
    name = spec.get("file", "produced.proto")
    with open(os.path.join(workdir, name), "w") as f:
        f.write(spec["schema"])
    import grpc_tools

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{workdir}", f"-I{include}", f"--python_out={workdir}", name],
        check=True,
    )
    sys.path.insert(0, workdir)
    module = importlib.import_module(name[: -len(".proto")].replace("/", ".") + "_pb2")
    message_class = getattr(module, spec["message"])
    if spec.get("registered"):
        # As a Java producer would register it (map<K, V> kept; Python renders map entries as messages):
        # the text registered as it is, the payload Python's protobuf serializes, framed in Confluent's wire
        # format under that id (Python's serializer cannot read Karapace's answer for a schema it did not
        # register itself).
        import struct

        from confluent_kafka.schema_registry import Schema

        schema_id = client.register_schema(f"{topic}-value", Schema(spec["schema"], "PROTOBUF"))
        index = list(module.DESCRIPTOR.message_types_by_name).index(spec["message"])
        indexes = b"\x00" if index == 0 else bytes([2, index * 2])
        head = b"\x00" + struct.pack(">I", schema_id) + indexes
        serialize = lambda v: head + ParseDict(v, message_class()).SerializeToString()
    else:
        serializer = ProtobufSerializer(message_class, client, {"use.deprecated.format": False})
        serialize = lambda v: serializer(ParseDict(v, message_class()), ctx)
elif fmt == "raw-avro":
    import io

    import fastavro

    parsed = fastavro.parse_schema(json.loads(spec["schema"]))

    def serialize(v):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, v)
        return out.getvalue()
elif fmt == "raw":
    serialize = bytes.fromhex
else:
    sys.exit(f"unknown format {fmt}")

producer = Producer({"bootstrap.servers": spec["brokers"], "enable.idempotence": True})
delivered = []
failed = []


def report(err, msg):
    (failed if err is not None else delivered).append(err)


for value in values:
    kwargs = {"partition": spec["partition"]} if "partition" in spec else {}
    if "timestamp" in spec:  # CreateTime in epoch milliseconds, as a producer with its own clock sets it
        kwargs["timestamp"] = spec["timestamp"]
    if "headers" in spec:
        kwargs["headers"] = spec["headers"]
    producer.produce(topic, value=serialize(value), on_delivery=report, **kwargs)
    producer.poll(0)
producer.flush(30)
if failed or len(delivered) != len(values):
    sys.exit(f"delivered {len(delivered)} of {len(values)}: {failed[:3]}")
print(len(delivered))
