#!/usr/bin/env bash
# Local single-node Apache Kafka broker (KRaft, no Docker) on 127.0.0.1, 4.x by default.
#   compose/kafka.sh up|down|status|pid [VERSION]
# VERSION (else CLAIMWATCH_KAFKA_VERSION, else KAFKA_VERSION): a 4.x or 3.9.x release, or the
# aliases 4 (the default, DEFAULT_VERSION below) and 3.9 (3.9.1). CLAIMWATCH_KAFKA_PORT (default
# 9092) is the client port; the controller listens on the port after it. Each version has its
# own jars (Maven Central, compose/kafka/<major>/pom.xml) and data in .cache/kafka-<version>/,
# so brokers of two versions on two ports run side by side. `pid` prints the pid of the broker
# this script started on that port (any version). With CLAIMWATCH_BOOTSTRAP set to another
# address than 127.0.0.1:<port>, nothing is done.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the newest 4.x whose jars resolve from Maven Central here and whose broker runs on Java 17
DEFAULT_VERSION=4.4.0
SMOKE_39_VERSION=3.9.1
HOST=127.0.0.1
PORT=${CLAIMWATCH_KAFKA_PORT:-9092}
[[ $PORT =~ ^[0-9]+$ ]] && ((PORT > 0 && PORT < 65535)) \
  || { echo "kafka.sh: error: CLAIMWATCH_KAFKA_PORT='$PORT' is not a port below 65535" >&2; exit 2; }
CONTROLLER_PORT=$((PORT + 1))
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

# sets VERSION, MAJOR and every path of that version's broker
choose_version() {
  VERSION=${1:-${CLAIMWATCH_KAFKA_VERSION:-${KAFKA_VERSION:-$DEFAULT_VERSION}}}
  case $VERSION in
    4) VERSION=$DEFAULT_VERSION ;;
    3.9) VERSION=$SMOKE_39_VERSION ;;
  esac
  case $VERSION in
    4.[0-9]*.[0-9]*) MAJOR=4 JAVA_MIN=17 ;;
    3.9.[0-9]*) MAJOR=3 JAVA_MIN=11 ;;
    *) die "Kafka version '$VERSION' is not supported: use a 4.x.y or 3.9.x release, or 4 or 3.9" ;;
  esac
  [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "Kafka version '$VERSION' is not x.y.z"
  CONF=$ROOT/compose/kafka
  POM=$CONF/$MAJOR/pom.xml
  HOME_DIR=$ROOT/.cache/kafka-$VERSION
  LIBS=$HOME_DIR/libs
  DATA=$HOME_DIR/data
  PROPS=$HOME_DIR/server.properties
  LOG=$HOME_DIR/broker.log
  PID_FILE=$HOME_DIR/broker.pid
  READY_FILE=$HOME_DIR/ready.pid # pid of the broker that passed the readiness check
  STAMP=$HOME_DIR/storage.stamp  # "<cluster id> <kafka version>" written after our own format
  if ((MAJOR == 4)); then
    LOG_OPTS=("-Dlog4j2.configurationFile=$CONF/4/log4j2.properties")
  else
    LOG_OPTS=("-Dlog4j.configuration=file:$CONF/3/log4j.properties")
  fi
}

external_bootstrap() {
  local b=${CLAIMWATCH_BOOTSTRAP:-}
  [[ -n $b && $b != "$HOST:$PORT" && $b != "localhost:$PORT" ]]
}

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

# the client port in a server.properties this script wrote (empty when it has none)
props_port() {
  sed -n 's|^advertised\.listeners=PLAINTEXT://[^:]*:\([0-9]*\).*|\1|p' "${1:-$PROPS}" 2>/dev/null
}

# refuse to act on this version's broker when it was started on another port than PORT
same_port_or_die() {
  local pid=$1 running
  running=$(props_port)
  [[ -z $running || $running == "$PORT" ]] && return 0
  die "Kafka $VERSION of this checkout already runs (pid $pid) on $HOST:$running, not $PORT;" \
    "use CLAIMWATCH_KAFKA_PORT=$running, or stop it first with" \
    "CLAIMWATCH_KAFKA_PORT=$running compose/kafka.sh down $VERSION"
}

find_java() {
  JAVA=java
  [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] && JAVA=$JAVA_HOME/bin/java
  command -v "$JAVA" >/dev/null \
    || die "java not found (Kafka $VERSION needs Java $JAVA_MIN+; install a JDK 17)"
  local v
  v=$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n 1)
  [[ -n $v && $v -ge $JAVA_MIN ]] \
    || die "Kafka $VERSION needs Java $JAVA_MIN+, $JAVA is version '${v:-unknown}' (set JAVA_HOME)"
}

fetch_libs() {
  local want
  want="$(sha256sum "$POM" | cut -d' ' -f1) $VERSION"
  if [[ -f $LIBS/.pom.sha256 && $(<"$LIBS/.pom.sha256") == "$want" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found: Maven is needed once to fetch the Kafka jars"
  say "fetching Apache Kafka $VERSION jars from Maven Central into .cache/kafka-$VERSION/libs ..."
  rm -rf "$LIBS.tmp"
  if ! mvn -B -q -f "$POM" dependency:copy-dependencies -Dkafka.version="$VERSION" \
    -Dkafka.libs.dir="$LIBS.tmp" \
    >"$HOME_DIR/maven.log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$HOME_DIR/maven.log" >&2
    rm -rf "$LIBS.tmp"
    die "Maven could not fetch the Kafka $VERSION jars (see above; Maven Central must be" \
      "reachable and serve that version)"
  fi
  ls "$LIBS.tmp/kafka_2.13-$VERSION.jar" >/dev/null 2>&1 || die "Maven fetched no kafka_2.13 jar"
  echo "$want" >"$LIBS.tmp/.pom.sha256"
  rm -rf "$LIBS"
  mv "$LIBS.tmp" "$LIBS"
}

wipe_data() {
  [[ $DATA == "$ROOT/.cache/kafka-$VERSION/data" ]] || die "refusing to delete unexpected path $DATA"
  rm -rf "$DATA" "$STAMP"
}

ensure_storage() {
  local meta=$DATA/meta.properties cid node ver
  if [[ -f $meta ]]; then
    cid=$(sed -n 's/^cluster\.id=//p' "$meta")
    node=$(sed -n 's/^node\.id=//p' "$meta")
    ver=$(sed -n 's/^version=//p' "$meta")
    if [[ -f $STAMP && $(<"$STAMP") == "$cid $VERSION" && $node == 1 && $ver == 1 ]]; then
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
  if ! "$JAVA" -Xmx256m "${LOG_OPTS[@]}" -cp "$LIBS/*" \
    kafka.tools.StorageTool format -t "$cid" -c "$PROPS" >"$HOME_DIR/format.log" 2>&1; then
    cat "$HOME_DIR/format.log" >&2
    die "formatting $DATA failed"
  fi
  echo "$cid $VERSION" >"$STAMP"
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
    "${LOG_OPTS[@]}" "-Dkafka.logs.dir=$HOME_DIR"
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
  say "started Kafka $VERSION broker (pid $pid) on $HOST:$PORT, waiting for 'Kafka Server started'" \
    "(log: .cache/kafka-$VERSION/broker.log)"
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
    same_port_or_die "$pid"
    if probe "$PORT"; then
      if [[ -f $READY_FILE && $(<"$READY_FILE") == "$pid" ]]; then
        say "Kafka $VERSION broker already running (pid $pid) on $HOST:$PORT"
        return 0
      fi
      ready_check "$pid"
      say "Kafka $VERSION broker running (pid $pid) on $HOST:$PORT"
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
    say "a Kafka broker not started by this script for $VERSION answers on $HOST:$PORT; using it" \
      "as is (its version may differ: use CLAIMWATCH_KAFKA_PORT for another port)"
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
  sed -e "s|@DATA_DIR@|$DATA|" -e "s|@CONTROLLER_PORT@|$CONTROLLER_PORT|g" -e "s|@PORT@|$PORT|g" \
    "$CONF/server.properties" >"$PROPS"
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
  say "Kafka $VERSION broker ready (pid $pid) on $HOST:$PORT"
}

cmd_down() {
  local pid
  if ! pid=$(broker_pid); then
    rm -f "$PID_FILE" "$READY_FILE"
    if probe "$PORT"; then
      say "the broker on $HOST:$PORT was not started by this script; leaving it alone"
    else
      say "Kafka $VERSION broker not running"
    fi
    return 0
  fi
  same_port_or_die "$pid"
  say "stopping Kafka $VERSION broker (pid $pid) on $HOST:$PORT"
  stop_pid "$pid"
  say "broker stopped"
}

cmd_status() {
  local pid
  if pid=$(broker_pid); then
    if [[ -n $(props_port) && $(props_port) != "$PORT" ]]; then
      say "Kafka $VERSION of this checkout runs (pid $pid) on $HOST:$(props_port), not $PORT"
      return 1
    fi
    if probe "$PORT"; then
      say "Kafka $VERSION running (pid $pid) on $HOST:$PORT"
      return 0
    fi
    say "not running: process $pid exists but does not answer on $HOST:$PORT"
    return 1
  fi
  if probe "$PORT"; then
    say "running on $HOST:$PORT (a Kafka broker not started by this script)"
    return 0
  fi
  say "Kafka $VERSION not running"
  return 1
}

# the pid of the broker (of any version) that this script started on PORT
cmd_pid() {
  local props pid
  for props in "$ROOT"/.cache/kafka-*/server.properties; do
    [[ -f $props && $(props_port "$props") == "$PORT" ]] || continue
    pid=$(<"${props%/server.properties}/broker.pid") 2>/dev/null || continue
    if [[ $pid =~ ^[0-9]+$ ]] && [[ $(cmdline_of "$pid") == *"kafka.Kafka $props"* ]]; then
      echo "$pid"
      return 0
    fi
  done
  say "no broker started by this script runs on $HOST:$PORT" >&2
  return 1
}

main() {
  local sub=${1:-}
  case $sub in
    up | down | status | pid) ;;
    *)
      echo "usage: $0 up|down|status|pid [VERSION]" >&2
      exit 2
      ;;
  esac
  (($# <= 2)) || die "usage: $0 up|down|status|pid [VERSION]"
  choose_version "${2:-}"
  if external_bootstrap; then
    say "CLAIMWATCH_BOOTSTRAP=$CLAIMWATCH_BOOTSTRAP: using that external cluster; nothing to $sub"
    exit 0
  fi
  mkdir -p "$HOME_DIR"
  if [[ $sub == up || $sub == down ]] && command -v flock >/dev/null; then
    exec 9>"$HOME_DIR/.lock"
    flock -w 300 9 || die "another compose/kafka.sh holds .cache/kafka-$VERSION/.lock"
  fi
  "cmd_$sub"
}

main "$@"
