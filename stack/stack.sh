#!/usr/bin/env bash
# The local stack: Apache Kafka (KRaft), the Firestore and Pub/Sub emulators, and a BigQuery emulator,
# all on 127.0.0.1, no Docker. `up` is idempotent: installs what is missing, starts what is not running,
# waits until each service answers a real request, and writes .stack/env. `down` stops all of it.
#
# Everything is started as `java ...` / the emulator binary directly (never through gcloud), each in its
# own process group, so that stopping it really stops the JVM.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK_DIR=${KBD_STACK_DIR:-$ROOT/.stack}
CACHE_DIR=${KBD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-bigquery-drain}
PROJECT=${KBD_PROJECT:-local-project}

KAFKA_PORT=${KBD_KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${KBD_KAFKA_CONTROLLER_PORT:-19093}
# A second listener as production brokers have it: SASL/SCRAM-SHA-512 over TLS, with a CA of our own.
KAFKA_SASL_PORT=${KBD_KAFKA_SASL_PORT:-19094}
# A third as Google's Managed Service for Apache Kafka has it: SASL/OAUTHBEARER over TLS, the token checked by
# stack/kafka/oauth/GoogleTokenValidator.java against a metadata-server stand-in that the tests run on
# KBD_METADATA_PORT (test/support/metadata-server.ts), for the one principal allowed.
KAFKA_OAUTH_PORT=${KBD_KAFKA_OAUTH_PORT:-19095}
# A fourth as Confluent Cloud has it: SASL/PLAIN over TLS (an API key and secret as user and password).
KAFKA_PLAIN_PORT=${KBD_KAFKA_PLAIN_PORT:-19098}
# A fifth as Aiven has it: TLS with a client certificate required (mTLS), no SASL.
KAFKA_MTLS_PORT=${KBD_KAFKA_MTLS_PORT:-19099}
METADATA_PORT=${KBD_METADATA_PORT:-19097}
OAUTH_PRINCIPAL=kbd-drain@${KBD_PROJECT:-local-project}.iam.gserviceaccount.com
FIRESTORE_PORT=${KBD_FIRESTORE_PORT:-18080}
PUBSUB_PORT=${KBD_PUBSUB_PORT:-18085}
BIGQUERY_PORT=${KBD_BIGQUERY_PORT:-19050}
BIGQUERY_GRPC_PORT=${KBD_BIGQUERY_GRPC_PORT:-19060}
# A schema registry: Karapace 3.15.0 (real, Confluent-compatible) when KBD_KARAPACE names its start script
# (karapace.sh: `up --kafka HOST:PORT --port N --dir D --topic T`, `down --dir D`; CI sets it where the machine
# has one), else the project's own minimal one (stack/mini-registry.mjs).
REGISTRY_PORT=${KBD_REGISTRY_PORT:-18081}
KARAPACE=${KBD_KARAPACE:-}
# Python's confluent-kafka (its Avro, Protobuf and JSON serializers): producers no one here wrote.
PY_PRODUCERS=$CACHE_DIR/py-confluent-kafka-2.16.1
# PostgreSQL 15 from Debian (installed on the machine), initialised here with wal_level=logical, as a
# source for Debezium's PostgreSQL connector on Kafka Connect (jars from Maven Central, stack/connect/pom.xml;
# the tests start Connect standalone themselves, one worker per test).
POSTGRES_PORT=${KBD_POSTGRES_PORT:-15432}
PG_BIN=${KBD_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
CONNECT_LIBS=$CACHE_DIR/connect-$(sha256sum "$ROOT/stack/connect/pom.xml" | cut -c1-8)
# Run as root, the cluster belongs to the `postgres` user, who may not reach the stack directory (a clone
# under /root, say): its data then lives under /tmp, one directory per stack directory.
if [[ $(id -u) == 0 ]]; then
  PG_DATA=${KBD_PG_DATA:-/tmp/kafka-bigquery-drain-postgres-$(printf '%s' "$STACK_DIR" | sha256sum | cut -c1-8)}
else
  PG_DATA=${KBD_PG_DATA:-$STACK_DIR/postgres}
fi

KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/stack/kafka/pom.xml")
BQ_EMULATOR_VERSION=$(sed -n 's:^require github.com/goccy/bigquery-emulator \(.*\)$:\1:p' "$ROOT/stack/bigquery-emulator/go.mod")
# Keyed by the pom too: a dependency added there (the tools) must not be hidden by an older cache.
KAFKA_LIBS=$CACHE_DIR/kafka-$KAFKA_VERSION-$(sha256sum "$ROOT/stack/kafka/pom.xml" | cut -c1-8)
# Our patches, applied in this order (each change commented with the BigQuery behaviour it restores):
# storage-write.patch, the Storage Write API where exactly-once depends on it; insert-all.patch, insertAll's
# BYTES decoded from base64 and a failed row's index sent when it is 0; schema-update.patch, a schema change
# through tables.patch/update reaching the table's storage, and refused where BigQuery refuses it;
# row-errors.patch, rows BigQuery refuses (JSON that does not parse, an invalid GEOGRAPHY) refused at append
# time with row errors naming them, in the Storage Write API and insertAll; cdc.patch, change data capture
# on the default stream (_CHANGE_TYPE upserts and deletes by primary key, _CHANGE_SEQUENCE_NUMBER
# ordering); dataset-duplicate.patch, creating a dataset that exists answers 409 Already Exists (not 500),
# as BigQuery does and as racing creators rely on; load-jobs.patch, a load job by upload as BigQuery runs it
# (an id used twice is 409 Already Exists, the load's outcome is the job's DONE status with errorResult read by
# jobs.get, newline-delimited JSON rows checked one by one and named by their byte position, a failed load
# loading nothing, an upload cut on its way making no job, one arrived whole running to its end though its
# client is gone); resumable-upload.patch, a load job by resumable upload as BigQuery takes one (opening the
# session makes no job, chunks answered 308 with the range received, the chunk naming the total makes the
# job, an upload never completed makes none); load-hold.patch, KBD_BQ_LOAD_JOB_SECONDS (unset: 0) in the
# emulator's environment holds every load job RUNNING that long, its rows in the table only once DONE, as
# BigQuery's jobs take seconds to minutes (a test file sets it before its emulator starts: loads that
# outlast the run that made them). They are part of the binary's name: a changed patch builds a new binary.
BQ_PATCHES=(
  "$ROOT/stack/bigquery-emulator/storage-write.patch"
  "$ROOT/stack/bigquery-emulator/insert-all.patch"
  "$ROOT/stack/bigquery-emulator/schema-update.patch"
  "$ROOT/stack/bigquery-emulator/row-errors.patch"
  "$ROOT/stack/bigquery-emulator/cdc.patch"
  "$ROOT/stack/bigquery-emulator/dataset-duplicate.patch"
  "$ROOT/stack/bigquery-emulator/load-jobs.patch"
  "$ROOT/stack/bigquery-emulator/resumable-upload.patch"
  "$ROOT/stack/bigquery-emulator/load-hold.patch"
)
# And one to the SQL engine under it (github.com/goccy/googlesqlite, the version the emulator's go.mod pins):
# googlesqlite-merge.patch, a MERGE whose ON clause joins columns by equality costs about one lookup per
# source row, as BigQuery's hash join does, instead of a predicate call for every (target, source) pair.
GSL_VERSION=$(sed -n 's:^\tgithub.com/goccy/googlesqlite \([^ ]*\).*$:\1:p' "$ROOT/stack/bigquery-emulator/go.mod")
GSL_PATCHES=("$ROOT/stack/bigquery-emulator/googlesqlite-merge.patch")
OAUTH_VALIDATOR=$CACHE_DIR/oauth-validator-$(cat "$ROOT/stack/kafka/oauth/GoogleTokenValidator.java" "$ROOT/stack/kafka/pom.xml" | sha256sum | cut -c1-8)
BQ_EMULATOR_BIN=$CACHE_DIR/bigquery-emulator-$BQ_EMULATOR_VERSION-$(cat "$ROOT/stack/bigquery-emulator/go.mod" "$ROOT/stack/bigquery-emulator/go.sum" "${BQ_PATCHES[@]}" "${GSL_PATCHES[@]}" | sha256sum | cut -c1-8)
GCLOUD_PLATFORM=${KBD_GCLOUD_PLATFORM:-/usr/lib/google-cloud-sdk/platform}
FIRESTORE_JAR=$GCLOUD_PLATFORM/cloud-firestore-emulator/cloud-firestore-emulator.jar
PUBSUB_JAR=$(ls "$GCLOUD_PLATFORM"/pubsub-emulator/lib/cloud-pubsub-emulator-*-all.jar 2>/dev/null | head -n 1 || true)

TLS_DIR=$STACK_DIR/tls
SCRAM_USER=kbd-drain
PLAIN_USER=kbd-api-key
LOGS=$STACK_DIR/logs
PIDS=$STACK_DIR/pids
# KBD_STACK_SERVICES picks some of them, for a second stack beside the first (the fault tests' own: they
# freeze and kill its services while other test files use the first); Kafka comes with each.
read -r -a SERVICES <<<"${KBD_STACK_SERVICES:-kafka firestore pubsub bigquery registry postgres}"
for s in "${SERVICES[@]}"; do
  [[ " kafka firestore pubsub bigquery registry postgres " == *" $s "* ]] \
    || { printf '[stack] error: KBD_STACK_SERVICES names "%s": not a service of the stack\n' "$s" >&2; exit 1; }
done
has_service() { [[ " ${SERVICES[*]} " == *" $1 "* ]]; }

say() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

port_of() {
  case $1 in
    kafka) echo "$KAFKA_PORT" ;; firestore) echo "$FIRESTORE_PORT" ;;
    pubsub) echo "$PUBSUB_PORT" ;; bigquery) echo "$BIGQUERY_PORT" ;; registry) echo "$REGISTRY_PORT" ;;
    postgres) echo "$POSTGRES_PORT" ;;
  esac
}
port_var_of() {
  case $1 in
    kafka) echo KBD_KAFKA_PORT ;; firestore) echo KBD_FIRESTORE_PORT ;;
    pubsub) echo KBD_PUBSUB_PORT ;; bigquery) echo KBD_BIGQUERY_PORT ;; registry) echo KBD_REGISTRY_PORT ;;
    postgres) echo KBD_POSTGRES_PORT ;;
  esac
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() {
  local pidfile=$PIDS/$1.pid
  [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# ---------------------------------------------------------------- install

install_kafka() {
  if [[ -f $KAFKA_LIBS/.complete ]]; then return; fi
  say "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_LIBS"
  rm -rf "$KAFKA_LIBS" && mkdir -p "$KAFKA_LIBS"
  mvn -q -B -f "$ROOT/stack/kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$KAFKA_LIBS" -DincludeScope=runtime >"$LOGS/install-kafka.log" 2>&1 \
    || { tail -n 30 "$LOGS/install-kafka.log" >&2; die "could not fetch the Kafka jars (log: $LOGS/install-kafka.log)"; }
  python3 -c 'import sys, zipfile; sys.exit("kafka/Kafka.class" not in zipfile.ZipFile(sys.argv[1]).namelist())' \
    "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" \
    || die "kafka_2.13-$KAFKA_VERSION.jar has no kafka.Kafka main class"
  touch "$KAFKA_LIBS/.complete"
}

# Kafka Connect (at the broker's version) and Debezium's PostgreSQL connector, for the CDC tests.
install_connect() {
  if [[ -f $CONNECT_LIBS/.complete ]]; then return; fi
  say "fetching Kafka Connect and Debezium's PostgreSQL connector from Maven Central into $CONNECT_LIBS"
  rm -rf "$CONNECT_LIBS" && mkdir -p "$CONNECT_LIBS"
  mvn -q -B -f "$ROOT/stack/connect/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$CONNECT_LIBS" -DincludeScope=runtime >"$LOGS/install-connect.log" 2>&1 \
    || { tail -n 30 "$LOGS/install-connect.log" >&2; die "could not fetch the Connect and Debezium jars (log: $LOGS/install-connect.log)"; }
  touch "$CONNECT_LIBS/.complete"
}

# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user Debian made.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A cluster of our own (trust on loopback only: it holds test data), logical decoding on for Debezium.
init_postgres() {
  local data=$PG_DATA/data
  [[ -f $data/PG_VERSION ]] && return
  if [[ ! -x $PG_BIN/initdb ]]; then
    # Debian's PostgreSQL (the machine has it; a machine without it gets it from Debian's packages).
    command -v apt-get >/dev/null || die "PostgreSQL not found (no initdb under /usr/lib/postgresql/*/bin) and apt-get is not available to install it; set KBD_PG_BIN"
    say "installing PostgreSQL from Debian's packages"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >"$LOGS/install-postgres.log" 2>&1 \
      || { tail -n 20 "$LOGS/install-postgres.log" >&2; die "could not install PostgreSQL (log: $LOGS/install-postgres.log)"; }
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  mkdir -p "$data" "$PG_DATA/run"
  [[ $(id -u) == 0 ]] && chown postgres "$PG_DATA" "$data" "$PG_DATA/run"
  as_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$LOGS/install-postgres.log" 2>&1 \
    || { tail -n 20 "$LOGS/install-postgres.log" >&2; die "initdb failed (log: $LOGS/install-postgres.log)"; }
}

# The OAUTHBEARER listener's token check, compiled against the broker's own jars with the machine's JDK.
install_oauth_validator() {
  if [[ -f $OAUTH_VALIDATOR/.complete ]]; then return; fi
  rm -rf "$OAUTH_VALIDATOR" && mkdir -p "$OAUTH_VALIDATOR"
  javac -proc:none -cp "$KAFKA_LIBS/*" -d "$OAUTH_VALIDATOR" "$ROOT/stack/kafka/oauth/GoogleTokenValidator.java" \
    >"$LOGS/install-oauth-validator.log" 2>&1 \
    || { cat "$LOGS/install-oauth-validator.log" >&2; die "could not compile the OAUTHBEARER token validator"; }
  touch "$OAUTH_VALIDATOR/.complete"
}

# A module's source as the proxy serves it, copied into ./<dir>, patched, and built through a `replace`.
patched_module() {
  local module=$1 version=$2 dir=$3 source_dir patch_file
  shift 3
  source_dir=$(go mod download -json "$module@$version" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$source_dir" "$dir" && chmod -R u+w "$dir"
  for patch_file in "$@"; do
    (cd "$dir" && patch -p1 --no-backup-if-mismatch <"$patch_file")
  done
  go mod edit -replace "$module=./$dir"
}

install_bigquery() {
  if [[ -x $BQ_EMULATOR_BIN ]]; then return; fi
  say "building github.com/goccy/bigquery-emulator $BQ_EMULATOR_VERSION (patched) through the Go module proxy (a few minutes the first time)"
  # `go install pkg@version` asks the proxy for the module's version list, which it refuses for this
  # module; building from a pinned go.mod/go.sum needs only the exact versions. The module's source, as
  # the proxy serves it, is copied next to a copy of that go.mod, patched, and built through a `replace`.
  local work=$CACHE_DIR/bigquery-emulator-build
  rm -rf "$work" && mkdir -p "$work"
  cp "$ROOT"/stack/bigquery-emulator/{go.mod,go.sum,tools.go} "$work/"
  (
    cd "$work"
    patched_module github.com/goccy/bigquery-emulator "$BQ_EMULATOR_VERSION" module "${BQ_PATCHES[@]}"
    patched_module github.com/goccy/googlesqlite "$GSL_VERSION" googlesqlite "${GSL_PATCHES[@]}"
    CGO_ENABLED=0 go build -trimpath -o "$BQ_EMULATOR_BIN.tmp" github.com/goccy/bigquery-emulator/cmd/bigquery-emulator
  ) >"$LOGS/install-bigquery.log" 2>&1 \
    || { tail -n 30 "$LOGS/install-bigquery.log" >&2; die "could not build the BigQuery emulator (log: $LOGS/install-bigquery.log)"; }
  mv "$BQ_EMULATOR_BIN.tmp" "$BQ_EMULATOR_BIN"
  rm -rf "$work"
}

# kcat (librdkafka) is a producer no one here wrote; the codec tests write with it. Debian ships it.
install_kcat() {
  command -v kcat >/dev/null && return
  command -v apt-get >/dev/null || die "kcat is not installed and apt-get is not available to install it"
  say "installing kcat from Debian's packages"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat; } >"$LOGS/install-kcat.log" 2>&1 \
    || { tail -n 20 "$LOGS/install-kcat.log" >&2; die "could not install kcat (log: $LOGS/install-kcat.log)"; }
}

# A CA of our own, the broker's certificate (SAN 127.0.0.1 and localhost) signed by it, a client
# certificate for mTLS, and a second CA that signed nothing (the "untrusted" case). Made once per stack
# directory; the broker reads PEM directly (ssl.keystore.type=PEM).
make_tls() {
  if [[ -f $TLS_DIR/.complete ]]; then
    # A CA made before the PLAIN and mTLS listeners existed: what they need is new.
    [[ -f $TLS_DIR/plain-password ]] || openssl rand -hex 16 >"$TLS_DIR/plain-password"
    make_other_client
    return
  fi
  command -v openssl >/dev/null || die "openssl is not on PATH (needed once, to make the local CA)"
  rm -rf "$TLS_DIR" && mkdir -p "$TLS_DIR" && chmod 700 "$TLS_DIR"
  (
    cd "$TLS_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 -subj "/CN=kbd local CA"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.pem -days 3650 -subj "/CN=kbd other CA"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >broker.ext
    openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=localhost"
    openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem -days 3650 -extfile broker.ext
    cat broker.key broker.pem >broker-keystore.pem
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=$SCRAM_USER"
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 3650 -extfile client.ext
    openssl rand -hex 16 >scram-password
    openssl rand -hex 16 >plain-password
  ) >"$LOGS/make-tls.log" 2>&1 || { tail -n 20 "$LOGS/make-tls.log" >&2; die "could not make the local CA and certificates"; }
  make_other_client
  touch "$TLS_DIR/.complete"
}

# A client certificate signed by the other CA: one the mTLS listener must refuse.
make_other_client() {
  [[ -f $TLS_DIR/other-client.pem ]] && return
  (
    cd "$TLS_DIR"
    openssl req -newkey rsa:2048 -nodes -keyout other-client.key -out other-client.csr -subj "/CN=stranger"
    openssl x509 -req -in other-client.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial \
      -out other-client.pem -days 3650 -extfile client.ext
  ) >>"$LOGS/make-tls.log" 2>&1 || die "could not make the other CA's client certificate"
}

# SCRAM credentials live in the cluster metadata: created with Kafka's own ConfigCommand once the broker
# answers (idempotent: an existing user just gets the same password again).
add_scram_user() {
  java -cp "$KAFKA_LIBS/*" kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --alter \
    --add-config "SCRAM-SHA-512=[iterations=4096,password=$(cat "$TLS_DIR/scram-password")]" \
    --entity-type users --entity-name "$SCRAM_USER" >"$LOGS/kafka-scram.log" 2>&1 \
    || { cat "$LOGS/kafka-scram.log" >&2; die "could not create the SCRAM user"; }
}

check_prerequisites() {
  command -v java >/dev/null || die "java (17+) is not on PATH"
  command -v javac >/dev/null || die "javac (a JDK 17+) is not on PATH (needed once, to build the OAUTHBEARER token validator)"
  command -v mvn >/dev/null || die "mvn is not on PATH (needed once, to fetch the Kafka jars)"
  command -v go >/dev/null || die "go is not on PATH (needed once, to build the BigQuery emulator)"
  command -v patch >/dev/null || die "patch is not on PATH (needed once, to patch the BigQuery emulator)"
  [[ -f $FIRESTORE_JAR ]] || die "Firestore emulator not found at $FIRESTORE_JAR (install google-cloud-cli's cloud-firestore-emulator, or set KBD_GCLOUD_PLATFORM)"
  [[ -n $PUBSUB_JAR && -f $PUBSUB_JAR ]] || die "Pub/Sub emulator not found under $GCLOUD_PLATFORM/pubsub-emulator (install google-cloud-cli's pubsub-emulator)"
  # The broker's health check is a kafkajs round trip (ping-kafka.mjs): without the project's packages it
  # could only time out, minutes later, as "kafka did not become healthy".
  [[ -d $ROOT/node_modules/kafkajs ]] || die "the project's npm packages are not installed ($ROOT/node_modules/kafkajs is missing): run 'npm ci' first"
}

# ---------------------------------------------------------------- start

# The JVMs on a machine of two cores: one GC thread, and only the quick compiler (C1). The suite is bound
# by the CPU (docs/development.md): C2's compilations and G1's threads cost more than they return.
JVM_LEAN="-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

spawn() { # name, command...
  local name=$1; shift
  # setsid: own process group, so `down` can kill the JVM and anything it forked.
  setsid "$@" >"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! >"$PIDS/$name.pid"
}

# What a broker is started from: its configuration (this script's start_kafka) and the validator's build.
kafka_build() { { declare -f start_kafka; echo "$OAUTH_VALIDATOR"; } | sha256sum | cut -c1-16; }

start_kafka() {
  local dir=$STACK_DIR/kafka
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT,OAUTH://127.0.0.1:$KAFKA_OAUTH_PORT,PLAIN_SSL://127.0.0.1:$KAFKA_PLAIN_PORT,MTLS://127.0.0.1:$KAFKA_MTLS_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT,OAUTH://127.0.0.1:$KAFKA_OAUTH_PORT,PLAIN_SSL://127.0.0.1:$KAFKA_PLAIN_PORT,MTLS://127.0.0.1:$KAFKA_MTLS_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,OAUTH:SASL_SSL,PLAIN_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PEM
listener.name.sasl_ssl.ssl.keystore.location=$TLS_DIR/broker-keystore.pem
listener.name.sasl_ssl.ssl.truststore.type=PEM
listener.name.sasl_ssl.ssl.truststore.location=$TLS_DIR/ca.pem
# A client certificate is checked when one is offered (mTLS), not required: SASL authenticates.
listener.name.sasl_ssl.ssl.client.auth=requested
# Managed Kafka's way in: OAUTHBEARER over TLS (see GoogleTokenValidator). The broker's own login on this
# listener is never used (inter-broker traffic is PLAINTEXT); Kafka still makes one, hence the unsecured sub.
# Sessions end when the token expires unless the client re-authenticates (KIP-368).
listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" tokenInfoUrl="http://127.0.0.1:$METADATA_PORT/tokeninfo" allowedPrincipals="$OAUTH_PRINCIPAL";
listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=dev.kbd.stack.GoogleTokenValidator
listener.name.oauth.oauthbearer.connections.max.reauth.ms=3600000
listener.name.oauth.ssl.keystore.type=PEM
listener.name.oauth.ssl.keystore.location=$TLS_DIR/broker-keystore.pem
# Confluent Cloud's way in: SASL/PLAIN over TLS, one user (an API key) with its password (its secret).
listener.name.plain_ssl.sasl.enabled.mechanisms=PLAIN
listener.name.plain_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$PLAIN_USER="$(cat "$TLS_DIR/plain-password")";
listener.name.plain_ssl.ssl.keystore.type=PEM
listener.name.plain_ssl.ssl.keystore.location=$TLS_DIR/broker-keystore.pem
# Aiven's: TLS, a client certificate signed by the CA required; no SASL.
listener.name.mtls.ssl.client.auth=required
listener.name.mtls.ssl.keystore.type=PEM
listener.name.mtls.ssl.keystore.location=$TLS_DIR/broker-keystore.pem
listener.name.mtls.ssl.truststore.type=PEM
listener.name.mtls.ssl.truststore.location=$TLS_DIR/ca.pem
# Records up to 12 MiB, so that the tests can produce values past what a BigQuery row can hold.
message.max.bytes=12582912
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
log.retention.check.interval.ms=5000
EOF
  cat >"$dir/log4j2.yaml" <<'EOF'
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
      - name: kafka.server.BrokerServer
        level: INFO
EOF
  if [[ ! -f $dir/data/meta.properties ]]; then
    java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$(java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid)" \
      -c "$dir/server.properties" --ignore-formatted >"$LOGS/kafka-format.log" 2>&1 \
      || { cat "$LOGS/kafka-format.log" >&2; die "kafka storage format failed"; }
  fi
  kafka_build >"$PIDS/kafka.build"
  spawn kafka java $JVM_LEAN -Xms256m -Xmx1g -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$KAFKA_LIBS/*:$OAUTH_VALIDATOR" kafka.Kafka "$dir/server.properties"
}

start_firestore() {
  spawn firestore java $JVM_LEAN -Duser.language=en -Xmx512m -cp "$FIRESTORE_JAR" \
    com.google.cloud.datastore.emulator.firestore.CloudFirestore start --host=127.0.0.1 --port="$FIRESTORE_PORT"
}

start_pubsub() {
  spawn pubsub java $JVM_LEAN -Xmx512m -jar "$PUBSUB_JAR" --host=127.0.0.1 --port="$PUBSUB_PORT"
}

start_bigquery() {
  port_open "$BIGQUERY_GRPC_PORT" && die "port $BIGQUERY_GRPC_PORT (KBD_BIGQUERY_GRPC_PORT) is already in use by another process"
  spawn bigquery "$BQ_EMULATOR_BIN" --project="$PROJECT" --host=127.0.0.1 \
    --port="$BIGQUERY_PORT" --grpc-port="$BIGQUERY_GRPC_PORT" --log-level=warn
  echo "$BQ_EMULATOR_BIN" >"$PIDS/bigquery.bin"
}

# Lanes: more BigQuery emulators beside the stack's own, lane N on BIGQUERY_PORT+100+N (REST) and
# BIGQUERY_GRPC_PORT+100+N (gRPC), so that end-to-end files run side by side, each on a fresh emulator of
# its own (a file claims the first free lane, starts it anew and stops it when it ends: test/support/stack.ts).
# `lane N` starts lane N anew, its data gone, and prints its two endpoints; `down` stops every lane.
lane_ports() { echo "$((BIGQUERY_PORT + 100 + $1)) $((BIGQUERY_GRPC_PORT + 100 + $1))"; }

lane() {
  local n=${1:?usage: stack/stack.sh lane N}
  [[ $n =~ ^[1-9][0-9]?$ ]] || die "a lane is a number from 1 to 99, not '$n'"
  [[ -x $BQ_EMULATOR_BIN ]] || die "the BigQuery emulator is not built yet: run 'stack/stack.sh up' first"
  mkdir -p "$LOGS" "$PIDS"
  local name=bigquery-lane$n rest grpc
  read -r rest grpc < <(lane_ports "$n")
  stop_one "$name" 2>/dev/null
  # An emulator of this lane that lost its pid file (a run killed halfway) holds the ports: ours, so stopped.
  pkill -KILL -f -- "--host=127.0.0.1 --port=$rest --grpc-port=$grpc" 2>/dev/null || true
  for _ in $(seq 1 50); do port_open "$rest" || port_open "$grpc" || break; sleep 0.1; done
  for port in "$rest" "$grpc"; do
    port_open "$port" && die "port $port (lane $n of the BigQuery emulator) is already in use by another process"
  done
  spawn "$name" "$BQ_EMULATOR_BIN" --project="$PROJECT" --host=127.0.0.1 --port="$rest" --grpc-port="$grpc" --log-level=warn
  local deadline=$((SECONDS + ${KBD_STACK_TIMEOUT:-180}))
  until curl -sf "http://127.0.0.1:$rest/bigquery/v2/projects/$PROJECT/datasets" >/dev/null 2>&1; do
    running "$name" || { tail -n 40 "$LOGS/$name.log" >&2; die "lane $n of the BigQuery emulator exited while starting"; }
    ((SECONDS > deadline)) && die "lane $n of the BigQuery emulator did not answer within ${KBD_STACK_TIMEOUT:-180}s"
    sleep 0.1
  done
  echo "BIGQUERY_API_ENDPOINT=http://127.0.0.1:$rest"
  echo "BIGQUERY_STORAGE_ENDPOINT=127.0.0.1:$grpc"
  echo "KBD_BIGQUERY_GRPC_PORT=$grpc"
}

lanes_running() { local f; for f in "$PIDS"/bigquery-lane*.pid; do [[ -f $f ]] && basename "$f" .pid; done; return 0; }

# After Kafka answers: Karapace keeps its schemas in a topic of the broker.
start_registry() {
  if [[ -n $KARAPACE && ! -f $KARAPACE ]]; then die "KBD_KARAPACE names $KARAPACE, which is not a file"; fi
  if [[ -n $KARAPACE ]]; then
    # A Karapace that did not answer in time is stopped too: else it holds the port, and the next `up` finds
    # it taken by a process `down` does not know.
    bash "$KARAPACE" up --kafka "127.0.0.1:$KAFKA_PORT" --port "$REGISTRY_PORT" --dir "$CACHE_DIR/karapace-3.15.0" \
      --topic _kbd_schemas >"$LOGS/registry.log" 2>&1 || {
      tail -n 30 "$LOGS/registry.log" >&2
      bash "$KARAPACE" down --dir "$CACHE_DIR/karapace-3.15.0" >/dev/null 2>&1 || true
      die "karapace did not start"
    }
    cp "$CACHE_DIR/karapace-3.15.0/pid" "$PIDS/registry.pid"
    echo karapace >"$PIDS/registry.kind"
  else
    spawn registry node "$ROOT/stack/mini-registry.mjs" "$REGISTRY_PORT" "$STACK_DIR/registry.json"
    echo minimal >"$PIDS/registry.kind"
  fi
}

start_postgres() {
  init_postgres
  local as=(); [[ $(id -u) == 0 ]] && as=(runuser -u postgres --)
  spawn postgres "${as[@]}" "$PG_BIN/postgres" -D "$PG_DATA/data" -c listen_addresses=127.0.0.1 \
    -c port="$POSTGRES_PORT" -c unix_socket_directories="$PG_DATA/run" -c wal_level=logical \
    -c max_replication_slots=32 -c max_wal_senders=32 -c fsync=off
}

install_python_producers() {
  "$PY_PRODUCERS/bin/python" -c 'import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf, confluent_kafka.schema_registry.json_schema, grpc_tools' 2>/dev/null && return 0
  say "installing Python's confluent-kafka 2.16.1 (serializers) into $PY_PRODUCERS"
  rm -rf "$PY_PRODUCERS"
  python3 -m venv "$PY_PRODUCERS"
  "$PY_PRODUCERS/bin/pip" install -q "confluent-kafka[avro,protobuf,json,schemaregistry]==2.16.1" grpcio-tools \
    >"$CACHE_DIR/py-producers-install.log" 2>&1 || { tail -n 20 "$CACHE_DIR/py-producers-install.log" >&2; die "pip install confluent-kafka failed"; }
}

# A real request per service, not just an open port.
healthy() {
  case $1 in
    kafka) node "$ROOT/stack/ping-kafka.mjs" "127.0.0.1:$KAFKA_PORT" >/dev/null 2>&1 ;;
    firestore) [[ $(curl -sf "http://127.0.0.1:$FIRESTORE_PORT/" 2>/dev/null) == Ok* ]] ;;
    pubsub) curl -sf "http://127.0.0.1:$PUBSUB_PORT/v1/projects/$PROJECT/topics" >/dev/null 2>&1 ;;
    bigquery) curl -sf "http://127.0.0.1:$BIGQUERY_PORT/bigquery/v2/projects/$PROJECT/datasets" >/dev/null 2>&1 ;;
    registry) curl -sf "http://127.0.0.1:$REGISTRY_PORT/subjects" >/dev/null 2>&1 ;;
    postgres) "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$POSTGRES_PORT" ;;
  esac
}

wait_healthy() {
  local name=$1 deadline=$((SECONDS + ${KBD_STACK_TIMEOUT:-180}))
  until healthy "$name"; do
    if ! running "$name"; then
      say "$name exited while starting; last lines of $LOGS/$name.log:"
      tail -n 40 "$LOGS/$name.log" >&2 || true
      die "$name did not start"
    fi
    if ((SECONDS > deadline)); then
      say "$name did not answer within ${KBD_STACK_TIMEOUT:-180}s; last lines of $LOGS/$name.log:"
      tail -n 40 "$LOGS/$name.log" >&2 || true
      die "$name did not become healthy"
    fi
    sleep 0.5
  done
}

write_env() {
  cat >"$STACK_DIR/env" <<EOF
KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
KBD_KAFKA_LIBS=$KAFKA_LIBS
KBD_KAFKA_SASL_BROKERS=127.0.0.1:$KAFKA_SASL_PORT
KBD_KAFKA_SASL_USERNAME=$SCRAM_USER
KBD_KAFKA_SASL_PASSWORD=$(cat "$TLS_DIR/scram-password")
KBD_KAFKA_OAUTH_BROKERS=127.0.0.1:$KAFKA_OAUTH_PORT
KBD_KAFKA_PLAIN_BROKERS=127.0.0.1:$KAFKA_PLAIN_PORT
KBD_KAFKA_PLAIN_USERNAME=$PLAIN_USER
KBD_KAFKA_PLAIN_PASSWORD=$(cat "$TLS_DIR/plain-password")
KBD_KAFKA_MTLS_BROKERS=127.0.0.1:$KAFKA_MTLS_PORT
KBD_OAUTH_PRINCIPAL=$OAUTH_PRINCIPAL
KBD_METADATA_HOST=127.0.0.1:$METADATA_PORT
KBD_TLS_DIR=$TLS_DIR
FIRESTORE_EMULATOR_HOST=127.0.0.1:$FIRESTORE_PORT
PUBSUB_EMULATOR_HOST=127.0.0.1:$PUBSUB_PORT
BIGQUERY_API_ENDPOINT=http://127.0.0.1:$BIGQUERY_PORT
BIGQUERY_STORAGE_ENDPOINT=127.0.0.1:$BIGQUERY_GRPC_PORT
KBD_BIGQUERY_GRPC_PORT=$BIGQUERY_GRPC_PORT
GOOGLE_CLOUD_PROJECT=$PROJECT
SCHEMA_REGISTRY_URL=http://127.0.0.1:$REGISTRY_PORT
KBD_REGISTRY_KIND=$(cat "$PIDS/registry.kind" 2>/dev/null || echo unknown)
KBD_PYTHON=$PY_PRODUCERS/bin/python
KBD_POSTGRES_PORT=$POSTGRES_PORT
KBD_PG_BIN=$PG_BIN
KBD_CONNECT_LIBS=$CONNECT_LIBS
EOF
}

up() {
  mkdir -p "$LOGS" "$PIDS" "$CACHE_DIR"
  check_prerequisites
  install_kafka
  install_oauth_validator
  install_bigquery
  install_kcat
  install_python_producers
  install_connect
  make_tls
  local started=()
  # A BigQuery emulator started from another build (before the patch changed) is replaced.
  if running bigquery && [[ $(cat "$PIDS/bigquery.bin" 2>/dev/null) != "$BQ_EMULATOR_BIN" ]]; then
    say "the running BigQuery emulator is another build; restarting it"
    stop_one bigquery
  fi
  # So is a broker started with another configuration (a listener added) or another token validator.
  if running kafka && [[ $(cat "$PIDS/kafka.build" 2>/dev/null) != "$(kafka_build)" ]]; then
    say "the running Kafka broker has another configuration; restarting it"
    stop_one kafka
  fi
  for s in "${SERVICES[@]}"; do
    if running "$s" || [[ $s == registry ]]; then continue; fi
    local port; port=$(port_of "$s")
    port_open "$port" && die "port $port ($(port_var_of "$s")) is already in use by another process; free it or choose another port"
    [[ $s == kafka ]] && port_open "$KAFKA_CONTROLLER_PORT" \
      && die "port $KAFKA_CONTROLLER_PORT (KBD_KAFKA_CONTROLLER_PORT) is already in use by another process"
    [[ $s == kafka ]] && port_open "$KAFKA_SASL_PORT" \
      && die "port $KAFKA_SASL_PORT (KBD_KAFKA_SASL_PORT) is already in use by another process"
    [[ $s == kafka ]] && port_open "$KAFKA_OAUTH_PORT" \
      && die "port $KAFKA_OAUTH_PORT (KBD_KAFKA_OAUTH_PORT) is already in use by another process"
    [[ $s == kafka ]] && port_open "$KAFKA_PLAIN_PORT" \
      && die "port $KAFKA_PLAIN_PORT (KBD_KAFKA_PLAIN_PORT) is already in use by another process"
    [[ $s == kafka ]] && port_open "$KAFKA_MTLS_PORT" \
      && die "port $KAFKA_MTLS_PORT (KBD_KAFKA_MTLS_PORT) is already in use by another process"
    "start_$s"
    started+=("$s")
  done
  for s in "${SERVICES[@]}"; do [[ $s == registry ]] || wait_healthy "$s"; done
  if has_service registry && ! running registry; then
    port_open "$REGISTRY_PORT" && die "port $REGISTRY_PORT (KBD_REGISTRY_PORT) is already in use by another process"
    start_registry
    started+=(registry)
  fi
  has_service registry && wait_healthy registry
  # The user lives in the cluster's metadata: set it whenever the broker (re)started.
  if [[ " ${started[*]} " == *" kafka "* || ! -f $STACK_DIR/env ]]; then add_scram_user; fi
  write_env
  [[ ${#started[@]} -gt 0 ]] && say "started: ${started[*]}" || say "already running"
  status
}

# The BigQuery emulator keeps its in-memory database in files of the system's temp folder (digits for a
# name) that it never removes: gigabytes after a bench, until the disk is full. Those it holds go once it
# has stopped.
emulator_temp_files() { # pid
  local fd target
  for fd in /proc/"$1"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    [[ $target =~ ^${TMPDIR:-/tmp}/[0-9]+(\.db)?$ ]] && echo "$target"
  done | sort -u
}

stop_one() {
  local name=$1 pidfile=$PIDS/$1.pid
  [[ -f $pidfile ]] || return 0
  local pid; pid=$(cat "$pidfile")
  local temp=()
  [[ $name == bigquery* ]] && mapfile -t temp < <(emulator_temp_files "$pid")
  if kill -0 "$pid" 2>/dev/null; then
    [[ $name == firestore ]] && curl -sf -m 2 -d '' "http://127.0.0.1:$FIRESTORE_PORT/shutdown" >/dev/null 2>&1 || true
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  [[ ${#temp[@]} -gt 0 ]] && rm -f "${temp[@]}"
  rm -f "$pidfile"
  say "stopped $name"
}

down() {
  for s in "${SERVICES[@]}" $(lanes_running); do stop_one "$s"; done
  rm -f "$STACK_DIR/env"
}

status() {
  for s in "${SERVICES[@]}"; do
    if running "$s"; then
      printf '  %-10s 127.0.0.1:%-6s pid %-8s log %s\n' "$s" "$(port_of "$s")" "$(cat "$PIDS/$s.pid")" "$LOGS/$s.log" >&2
    else
      printf '  %-10s not running\n' "$s" >&2
    fi
  done
  [[ -f $STACK_DIR/env ]] && say "environment: $STACK_DIR/env"
  return 0
}

# The test suite's Kafka topics (named `kbdtest...`) deleted, and no other: the suite does it when it starts
# and when it ends, so that a broker reused day after day does not slow down.
prune() {
  running kafka || die "kafka is not running"
  node "$ROOT/stack/prune-topics.mjs" "127.0.0.1:$KAFKA_PORT" >&2
}

# Firestore's data can be wiped without a restart; Pub/Sub, Kafka and BigQuery rely on unique names per test.
reset() {
  curl -sf -X DELETE "http://127.0.0.1:$FIRESTORE_PORT/emulator/v1/projects/$PROJECT/databases/(default)/documents" >/dev/null
  say "firestore data reset"
}

# A fresh instance of one service (its data gone): the BigQuery emulator slows down as data piles up in it.
restart() {
  local name=${1:?usage: stack/stack.sh restart SERVICE}
  stop_one "$name"
  up >/dev/null
}

# Fault injection (tests, and anyone trying a failure by hand): freeze a service (SIGSTOP to its whole
# process group: it keeps its sockets and answers nothing, as a hung VM or a GC pause does), thaw it
# (SIGCONT), or kill it hard (SIGKILL, no shutdown; `up` starts it again with its data where it keeps any).
signal_service() { # name, signal
  local name=${1:?usage: stack/stack.sh freeze|thaw|kill SERVICE} pidfile=$PIDS/$1.pid
  [[ -f $pidfile ]] || die "$name is not running"
  kill "-$2" -- "-$(cat "$pidfile")"
}

case ${1:-} in
  up) up ;;
  restart) restart "${2:-}" ;;
  lane) lane "${2:-}" ;;
  freeze) signal_service "${2:-}" STOP ;;
  thaw) signal_service "${2:-}" CONT ;;
  kill)
    pid=$(cat "$PIDS/${2:-none}.pid" 2>/dev/null || true)
    temp=()
    [[ ${2:-} == bigquery && -n $pid ]] && mapfile -t temp < <(emulator_temp_files "$pid")
    signal_service "${2:-}" KILL
    # Gone (and its ports free) before this returns: `up` may follow at once.
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    [[ ${#temp[@]} -gt 0 ]] && rm -f "${temp[@]}"
    rm -f "$PIDS/${2}.pid" ;;
  down) down ;;
  status) status ;;
  reset) reset ;;
  prune) prune ;;
  *) echo "usage: stack/stack.sh up|down|status|reset|prune|restart SERVICE|lane N|freeze SERVICE|thaw SERVICE|kill SERVICE" >&2; exit 64 ;;
esac
