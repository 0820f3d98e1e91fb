# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/usage.sh - sourced by deploy/local/stack.sh: the text of --help. Not a program of its own.

usage() {
    cat <<'EOF'
Usage: deploy/local/stack.sh [options] VERB

Local dev/test stack: single-node KRaft Kafka (or three nodes, --nodes 3) +
private MariaDB on 127.0.0.1.

Verbs:
  up            start Kafka and MariaDB (whatever is not running yet) and wait
                until both answer; idempotent
  down          stop both (SIGTERM, then SIGKILL after a deadline); idempotent
                  --purge  also delete the state directory (all data)
                  --kill   SIGKILL immediately (simulate a crash)
  status        show what is running; exit 0 if everything answers, 3 if not
  env           print 'export NAME=value' lines to eval, for kdelayctl,
                  kdelay-forwarder and the tests: KDELAY_BROKERS,
                  KDELAY_MYSQL_URL, KDELAY_STACK_DIR, KDELAY_KAFKA_VERSION,
                  KDELAY_KAFKA_NODES, KDELAY_KAFKA_SECURITY (and KDELAY_MYSQL_CA
                  with --mysql-tls on; KDELAY_KAFKA_CONFIG and
                  KDELAY_CLIENT_CONFIG when secured)
  kafka-jars    fetch the Kafka jars (once, cached) and print their directory
                (deploy/docker/standin-images.sh copies them into an image)
  kafka-start   start only Kafka (keeps data), wait until it answers
  kafka-stop    stop only Kafka (keeps data); --kill for SIGKILL
  node-stop I   stop Kafka node I (0..N-1) of a multi-node stack (keeps its
                data); --kill for SIGKILL (a crash)
  node-start I  start Kafka node I again and wait until it answers a metadata
                request listing every node and is back in the ISR of every
                partition it replicates
  mysql-start   start only the private MariaDB (keeps data)
  mysql-stop    stop only the private MariaDB (keeps data); --kill for SIGKILL
  mysql-pause   freeze the private MariaDB (SIGSTOP): connections stay open
                and every statement hangs, as on a stalled server
  mysql-resume  let a frozen MariaDB go on (SIGCONT)
  mysql-readonly on|off
                SET GLOBAL read_only: statements of users without the
                READ ONLY ADMIN privilege (not root) fail, as on a demoted
                primary
  topic NAME    create topic NAME if it does not exist (a target topic for
                tasks; Kafka here does not auto-create topics)
                  --partitions N  (default 3)
  acl ARGS...   secured stacks: run Kafka's AclCommand (kafka-acls) as the
                admin with ARGS (everything after 'acl'), e.g.
                  acl --add --allow-principal User:producer --operation Write
                      --topic kdelay.tier. --resource-pattern-type prefixed

Options (an option overrides its environment variable):
  --stack-dir DIR     KDELAY_STACK_DIR          state dir (default <repo>/.stack)
  --kafka-port N      KDELAY_KAFKA_PORT         Kafka PLAINTEXT port (default 19092);
                                                the KRaft controller uses N+1
  --kafka-version V   KDELAY_KAFKA_VERSION      Apache Kafka version to run (default:
                                                deploy/local/kafka/pom.xml's; 3.9.x and
                                                4.x are supported), fetched from Maven
                                                Central; a stack dir keeps one version's
                                                data ('down --purge' to change it)
  --nodes N           KDELAY_KAFKA_NODES        Kafka nodes: 1 (default) or 3. With 3,
                                                three combined broker+controller KRaft
                                                nodes; node I listens on N+2*I (clients)
                                                and N+2*I+1 (controller), where N is the
                                                Kafka port, and has node.id I+1; topics
                                                default to replication factor 3 and
                                                min.insync.replicas=2. A stack dir keeps
                                                one node count's data
  --mysql-port N      KDELAY_MYSQL_PORT         private MariaDB port (default 13306)
  --mysql-url URL     KDELAY_MYSQL_URL_EXTERNAL use an existing MySQL/MariaDB
                      (mysql://user[:password]@host[:port]/db) instead of a
                      private instance; 'up' only checks that it answers and
                      creates the database. An empty value selects the private
                      instance again.
  --mysql-tls on|off  KDELAY_MYSQL_TLS          the private MariaDB serves TLS only
                      (require_secure_transport=ON) with a certificate of a
                      private CA made with openssl in <stack-dir>/tls/; 'env'
                      then gives a URL with ssl-mode=VERIFY_IDENTITY and the
                      CA, and KDELAY_MYSQL_CA (default off)
  --security MODE     KDELAY_KAFKA_SECURITY     none (default: PLAINTEXT, no ACLs),
                      sasl_ssl (SCRAM-SHA-512 over TLS) or mtls (TLS client
                      certificates): a private CA and certificates in
                      <stack-dir>/kafka-tls/, principals User:admin (super
                      user), User:forwarder, User:producer, the
                      StandardAuthorizer with allow.everyone.if.no.acl.found=
                      false; 'env' adds KDELAY_KAFKA_CONFIG (read by kdelay's
                      binaries) and KDELAY_CLIENT_CONFIG, both naming
                      kafka-tls/admin.properties: the admin's librdkafka
                      properties, password inline (0600), for any librdkafka
                      client (the others' are kafka-tls/client-<principal>
                      .properties, passwords by file: reference). A stack
                      dir keeps its mode ('down --purge' to change it).
                      sasl_ssl needs Kafka 3.9.x while kcat's librdkafka is
                      older than 2.6.1 (docs/security.md).
  -h, --help          show this help

Ports, version, node count and the external URL given to a starting verb are
remembered in <stack-dir>/stack.conf and reused by later verbs unless
overridden. 'down' stops every Kafka node it finds in the stack dir.

Other environment: KDELAY_KAFKA_READY_TIMEOUT (90), KDELAY_MYSQL_READY_TIMEOUT
(60), KDELAY_STOP_TIMEOUT (60) in seconds; KDELAY_KAFKA_JAVA_OPTS (extra JVM
options for the broker); KDELAY_MYSQL_REDO_LOG (16M: the private MariaDB's
innodb_log_file_size, at its start); KDELAY_MYSQL_GENERAL_LOG=FILE (the private MariaDB
logs every statement to FILE, for tools/sqlcheck; remembered like the
ports, set but empty to stop); JAVA_HOME.

The private MariaDB runs with MySQL 8.0's default sql_mode plus
STRICT_ALL_TABLES (ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, NO_ZERO_DATE,
...), so that what passes here passes on MySQL 8 (docs/fate-protocol.md,
"Servers").

Logs: <stack-dir>/kafka/server.log (broker, log4j), <stack-dir>/kafka/stdout.log
(JVM output), <stack-dir>/mysql/error.log (MariaDB). With --nodes 3 each node
has its own directory <stack-dir>/kafka/nodeI/ (data, server.properties,
server.log, stdout.log, kafka.pid).

Typical use:
  deploy/local/stack.sh up && eval "$(deploy/local/stack.sh env)"
  deploy/local/stack.sh --stack-dir .stack-3n --kafka-port 19292 \
      --mysql-port 13506 --nodes 3 up          # a 3-node cluster
  deploy/local/stack.sh --stack-dir .stack-3n node-stop 1 --kill
  deploy/local/stack.sh --stack-dir .stack-3n node-start 1
EOF
}
