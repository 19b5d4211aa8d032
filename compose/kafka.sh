#!/usr/bin/env bash
# Local single-node Apache Kafka 3.9 broker (KRaft, no Docker) on 127.0.0.1:9092.
#   compose/kafka.sh up|down|status
# Jars come from Maven Central (compose/kafka/pom.xml) into .cache/kafka/libs, data lives in
# .cache/kafka-data. With CLAIMWATCH_BOOTSTRAP set to another address, nothing is done.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONF=$ROOT/compose/kafka
HOME_DIR=$ROOT/.cache/kafka
LIBS=$HOME_DIR/libs
DATA=$ROOT/.cache/kafka-data
PROPS=$HOME_DIR/server.properties
LOG=$HOME_DIR/broker.log
PID_FILE=$HOME_DIR/broker.pid
READY_FILE=$HOME_DIR/ready.pid # pid of the broker that passed the readiness check
STAMP=$HOME_DIR/storage.stamp  # "<cluster id> <kafka version>" written after our own format
HOST=127.0.0.1
PORT=9092
CONTROLLER_PORT=9093
HEAP=${CLAIMWATCH_KAFKA_HEAP:-512m}
START_TIMEOUT=${CLAIMWATCH_KAFKA_START_TIMEOUT:-90}
STOP_TIMEOUT=30
READY_ATTEMPTS=5
# fatal startup errors meaning "this data dir is not usable by this broker": wipe it, retry once
STORAGE_ERRORS='initializeLogDirs|MetaProperties|meta\.properties|cluster\.?id|directory\.?id|metadata\.version|kraft\.version|bootstrap\.checkpoint|formatted'

say() { printf 'kafka.sh: %s\n' "$*"; }
die() {
  printf 'kafka.sh: error: %s\n' "$*" >&2
  exit 1
}

external_bootstrap() {
  local b=${CLAIMWATCH_BOOTSTRAP:-}
  [[ -n $b && $b != "$HOST:$PORT" && $b != "localhost:$PORT" ]]
}

kafka_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$CONF/pom.xml"; }

# probe PORT: 0 = a Kafka broker answers ApiVersions, 1 = something else listens, 2 = nothing does
probe() {
  local port=$1 reply
  (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 2
  # ApiVersions v0: size 12, api_key 18, version 0, correlation id 7, client id "cw"
  # shellcheck disable=SC2016 # expanded by the inner shell
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x07\x00\x02cw" >&3
    head -c 10 <&3 | od -An -tx1' "$HOST" "$port" 2>/dev/null | tr -d ' \n') || true
  # reply: size(4) correlation id(4) error code(2)
  [[ ${reply:8:12} == 000000070000 ]] && return 0
  return 1
}

cmdline_of() { ps -ww -o args= -p "$1" 2>/dev/null || true; }

# the pid of the broker this script started (pid file, else by its exact config path)
broker_pid() {
  local pid=""
  if [[ -f $PID_FILE ]]; then
    pid=$(<"$PID_FILE")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
      && [[ $(cmdline_of "$pid") == *"kafka.Kafka $PROPS"* ]]; then
      echo "$pid"
      return 0
    fi
  fi
  pid=$(pgrep -f -- "kafka.Kafka $PROPS" 2>/dev/null | head -n 1 || true)
  if [[ -n $pid ]]; then
    echo "$pid" >"$PID_FILE"
    echo "$pid"
    return 0
  fi
  return 1
}

find_java() {
  JAVA=java
  [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] && JAVA=$JAVA_HOME/bin/java
  command -v "$JAVA" >/dev/null || die "java not found (Kafka 3.9 needs Java 11+; install a JDK 17)"
  local v
  v=$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n 1)
  [[ -n $v && $v -ge 11 ]] || die "Kafka 3.9 needs Java 11+, $JAVA is version '${v:-unknown}'"
}

fetch_libs() {
  local want
  want=$(sha256sum "$CONF/pom.xml" | cut -d' ' -f1)
  if [[ -f $LIBS/.pom.sha256 && $(<"$LIBS/.pom.sha256") == "$want" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found: Maven is needed once to fetch the Kafka jars"
  say "fetching Apache Kafka $(kafka_version) jars from Maven Central into .cache/kafka/libs ..."
  rm -rf "$LIBS.tmp"
  if ! mvn -B -q -f "$CONF/pom.xml" dependency:copy-dependencies -Dkafka.libs.dir="$LIBS.tmp" \
    >"$HOME_DIR/maven.log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$HOME_DIR/maven.log" >&2
    rm -rf "$LIBS.tmp"
    die "Maven could not fetch the Kafka jars (see above; Maven Central must be reachable)"
  fi
  ls "$LIBS.tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || die "Maven fetched no kafka_2.13 jar"
  echo "$want" >"$LIBS.tmp/.pom.sha256"
  rm -rf "$LIBS"
  mv "$LIBS.tmp" "$LIBS"
}

wipe_data() {
  [[ $DATA == "$ROOT/.cache/kafka-data" ]] || die "refusing to delete unexpected path $DATA"
  rm -rf "$DATA" "$STAMP"
}

ensure_storage() {
  local meta=$DATA/meta.properties cid node ver
  if [[ -f $meta ]]; then
    cid=$(sed -n 's/^cluster\.id=//p' "$meta")
    node=$(sed -n 's/^node\.id=//p' "$meta")
    ver=$(sed -n 's/^version=//p' "$meta")
    if [[ -f $STAMP && $(<"$STAMP") == "$cid $(kafka_version)" && $node == 1 && $ver == 1 ]]; then
      return 0
    fi
    say "$DATA was formatted by someone else (cluster.id=${cid:-?} node.id=${node:-?}" \
      "version=${ver:-?}); wiping it and formatting a new cluster"
    wipe_data
  elif [[ -d $DATA && -n $(ls -A "$DATA") ]]; then
    say "$DATA has no meta.properties (half-formatted?); wiping it"
    wipe_data
  fi
  mkdir -p "$DATA"
  # a random 22-char base64url UUID, like Kafka's Uuid.randomUuid() (which never starts with '-')
  cid=-
  while [[ $cid == -* ]]; do
    cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
  done
  if ! "$JAVA" -Xmx256m -Dlog4j.configuration="file:$CONF/log4j.properties" -cp "$LIBS/*" \
    kafka.tools.StorageTool format -t "$cid" -c "$PROPS" >"$HOME_DIR/format.log" 2>&1; then
    cat "$HOME_DIR/format.log" >&2
    die "formatting $DATA failed"
  fi
  echo "$cid $(kafka_version)" >"$STAMP"
  say "formatted $DATA (cluster id $cid)"
}

stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "broker (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT} s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 25; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
  fi
  rm -f "$PID_FILE" "$READY_FILE"
}

# start the JVM; returns 0 once "Kafka Server started" is logged, 3 if it died over its storage
start_broker() {
  local pid="" i
  [[ -f $LOG ]] && mv -f "$LOG" "$LOG.1"
  rm -f "$PID_FILE" "$READY_FILE"
  local -a java_cmd=(
    "$JAVA" "-Xms$HEAP" "-Xmx$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$CONF/log4j.properties" "-Dkafka.logs.dir=$HOME_DIR"
    -cp "$LIBS/*" kafka.Kafka "$PROPS"
  )
  local -a detach=(nohup)
  command -v setsid >/dev/null && detach+=(setsid)
  # the inner shell writes its own pid, then becomes the JVM (same pid); fd 9 (our lock) is closed
  # shellcheck disable=SC2016 # expanded by the inner shell
  "${detach[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" "${java_cmd[@]}" \
    >"$LOG" 2>&1 </dev/null 9>&- &
  for ((i = 0; i < 50; i++)); do
    [[ -s $PID_FILE ]] && pid=$(<"$PID_FILE") && [[ -n $pid ]] && break
    sleep 0.1
  done
  [[ -n $pid ]] || die "the broker did not start (no pid written); see $LOG"
  say "started broker (pid $pid), waiting for 'Kafka Server started' (log: .cache/kafka/broker.log)"
  local deadline=$((SECONDS + START_TIMEOUT))
  until grep -q "Kafka Server started" "$LOG" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      say "the broker JVM exited during startup; last lines of $LOG:" >&2
      tail -n 30 "$LOG" >&2
      if sed -n '/Exiting Kafka due to fatal exception/,$p' "$LOG" | grep -qiE "$STORAGE_ERRORS"; then
        return 3
      fi
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      say "no 'Kafka Server started' within ${START_TIMEOUT} s; last lines of $LOG:" >&2
      tail -n 30 "$LOG" >&2
      stop_pid "$pid"
      exit 1
    fi
    sleep 0.2
  done
  for ((i = 0; i < 50; i++)); do
    probe "$PORT" && return 0
    sleep 0.2
  done
  stop_pid "$pid"
  die "'Kafka Server started' was logged but $HOST:$PORT does not answer ApiVersions"
}

ready_check() {
  local pid=$1 py=$ROOT/.venv/bin/python attempt
  [[ -x $py ]] || py=python3
  if ! "$py" -c 'import aiokafka' 2>/dev/null; then
    say "warning: readiness check skipped: $py cannot import aiokafka (run 'make install')" >&2
    return 0
  fi
  for ((attempt = 1; attempt <= READY_ATTEMPTS; attempt++)); do
    if "$py" "$ROOT/compose/kafka_ready.py" --bootstrap "$HOST:$PORT"; then
      echo "$pid" >"$READY_FILE"
      return 0
    fi
    ((attempt < READY_ATTEMPTS)) && sleep 2
  done
  say "readiness check failed ${READY_ATTEMPTS} times; last lines of $LOG:" >&2
  tail -n 30 "$LOG" >&2
  stop_pid "$pid"
  exit 1
}

cmd_up() {
  local pid rc=0
  if pid=$(broker_pid); then
    if probe "$PORT"; then
      if [[ -f $READY_FILE && $(<"$READY_FILE") == "$pid" ]]; then
        say "broker already running (pid $pid) on $HOST:$PORT"
        return 0
      fi
      ready_check "$pid"
      say "broker running (pid $pid) on $HOST:$PORT"
      return 0
    fi
    say "broker (pid $pid) runs but does not answer on $HOST:$PORT; restarting it"
    stop_pid "$pid"
  elif [[ -f $PID_FILE ]]; then
    say "removing stale pid file ($(<"$PID_FILE") is not a running broker of ours)"
    rm -f "$PID_FILE" "$READY_FILE"
  fi

  rc=0
  probe "$PORT" || rc=$?
  if ((rc == 0)); then
    say "a Kafka broker not started by this script answers on $HOST:$PORT; using it as is"
    return 0
  elif ((rc == 1)); then
    die "port $PORT on $HOST is taken by something that is not Kafka (see: ss -ltnp 'sport = :$PORT');" \
      "stop it, or point CLAIMWATCH_BOOTSTRAP at another broker"
  fi
  rc=0
  probe "$CONTROLLER_PORT" || rc=$?
  ((rc == 2)) || die "port $CONTROLLER_PORT on $HOST (the broker's controller listener) is taken" \
    "(see: ss -ltnp 'sport = :$CONTROLLER_PORT')"

  find_java
  fetch_libs
  sed "s|@DATA_DIR@|$DATA|" "$CONF/server.properties" >"$PROPS"
  ensure_storage
  rc=0
  start_broker || rc=$?
  if ((rc == 3)); then
    say "the broker rejected its storage; wiping $DATA and retrying once"
    wipe_data
    ensure_storage
    rc=0
    start_broker || rc=$?
    ((rc == 0)) || die "the broker does not start on freshly formatted storage either; see $LOG"
  fi
  pid=$(<"$PID_FILE")
  ready_check "$pid"
  say "broker ready (pid $pid) on $HOST:$PORT"
}

cmd_down() {
  local pid
  if ! pid=$(broker_pid); then
    rm -f "$PID_FILE" "$READY_FILE"
    if probe "$PORT"; then
      say "the broker on $HOST:$PORT was not started by this script; leaving it alone"
    else
      say "broker not running"
    fi
    return 0
  fi
  say "stopping broker (pid $pid)"
  stop_pid "$pid"
  say "broker stopped"
}

cmd_status() {
  local pid
  if pid=$(broker_pid); then
    if probe "$PORT"; then
      say "running (pid $pid) on $HOST:$PORT"
      return 0
    fi
    say "not running: process $pid exists but does not answer on $HOST:$PORT"
    return 1
  fi
  if probe "$PORT"; then
    say "running on $HOST:$PORT (a Kafka broker not started by this script)"
    return 0
  fi
  say "not running"
  return 1
}

main() {
  local sub=${1:-}
  case $sub in
    up | down | status) ;;
    *)
      echo "usage: $0 up|down|status" >&2
      exit 2
      ;;
  esac
  if external_bootstrap; then
    say "CLAIMWATCH_BOOTSTRAP=$CLAIMWATCH_BOOTSTRAP: using that external cluster; nothing to $sub"
    exit 0
  fi
  mkdir -p "$HOME_DIR"
  if [[ $sub != status ]] && command -v flock >/dev/null; then
    exec 9>"$HOME_DIR/.lock"
    flock -w 300 9 || die "another compose/kafka.sh holds .cache/kafka/.lock"
  fi
  "cmd_$sub"
}

main "$@"
