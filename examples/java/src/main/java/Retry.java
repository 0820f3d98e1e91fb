/*
 * Retries a consumed Kafka record later, without blocking its partition,
 * from Java: the header protocol of kdelay_retry() (include/kdelay/retry.h,
 * docs/retries.md) on kafka-clients alone. The record is scheduled again
 * as a kdelay task (Schedule.java: tier choice, wire headers) with its key,
 * value and user headers, due after an exponential backoff with jitter, to
 * its original topic (or the policy's retry topic); once its failures
 * exceed the policy's maximum it goes to the dead-letter topic instead.
 * Both carry the retry headers:
 *
 *   kdelay-attempt              failures so far, this one included ("1" first)
 *   kdelay-original-topic       where the record was first consumed
 *   kdelay-original-partition   (kept from the first failure on)
 *   kdelay-original-offset
 *   kdelay-failures             one line per failure, oldest first:
 *                               "attempt=N failed_at=EPOCH_MS reason=TEXT"
 *
 * and a dead letter kdelay-dead-reason "retries-exhausted" (or
 * "bad-retry-header NAME" for a record whose retry headers are malformed:
 * dead-lettered at once). The consumed record's other kdelay-* headers (a
 * fired task's id and fire-at) are dropped.
 *
 * In an application: Retry.retry(producer, prefix, tiers, record, policy,
 * reason) on your own producer, for a record whose processing failed. With
 * a transactional producer, call it inside the transaction that also sends
 * the consumed offsets (sendOffsetsToTransaction): the retry is written if
 * and only if the offsets are committed. Without one (idempotent,
 * acks=all), wait for the returned delivery before committing the offset,
 * as the command line below does; a crash in between writes the retry
 * again when the record is read again, under the same task id (derived
 * from the original record and the attempt), so it fires once.
 *
 * Build (examples/java/), then run:
 *
 *   mvn -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 *   java -cp "target/classes:$(cat target/classpath.txt)" Retry \
 *       --brokers 127.0.0.1:19092 --group orders-app --topic orders \
 *       --dead-topic orders.dlt --max-attempts 3 --backoff 1s --count 10
 *
 * It consumes --topic as --group, treats every record as a failure of
 * processing, retries it (or dead-letters it), waits until Kafka has
 * acknowledged that, then commits the record's offset; one JSON line per
 * record. Exit 0 after --count records, 1 on --timeout or a Kafka error,
 * 2 on bad arguments. --tiers must be the forwarders' ladder.
 */
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Retry {
    static final String ATTEMPT = "kdelay-attempt", ORIG_TOPIC = "kdelay-original-topic",
        ORIG_PARTITION = "kdelay-original-partition", ORIG_OFFSET = "kdelay-original-offset",
        FAILURES = "kdelay-failures", DEAD_REASON = "kdelay-dead-reason";
    static final long MAX_DELAY_MS = 10L * 365 * 24 * 3600 * 1000; // 10 years
    static final int REASON_MAX = 200; // bytes of reason kept per failure
    static final int ID_MAX = 128;     // bytes of a task id
    /** FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211),
     *  as retry.c and retry.py hash a long retry id. */
    static final long FNV_BASIS = 0xcbf29ce484222325L, FNV_PRIME = 0x100000001b3L;

    /** Exponential backoff with jitter: the n-th retry is due
     *  d(n) = min(backoffMaxMs, backoffInitialMs * multiplier^(n-1)) after
     *  the failure, less a random part of up to jitter * d(n). */
    public static final class Policy {
        public long backoffInitialMs = 1000;
        public long backoffMaxMs = 3600 * 1000;
        public double multiplier = 2.0;    // 1 .. 1000
        public double jitter = 0.2;        // 0 .. 1
        public int maxAttempts = 5;        // failures retried (1 .. 100); the next is dead
        public String retryTopic;          // null: the original topic
        public String deadTopic;           // required

        /** Throws IllegalArgumentException as kdelay_retry()'s policy check. */
        public void check() {
            String why = null;
            if (deadTopic == null || !topicValid(ascii(deadTopic)))
                why = "policy dead_topic " + quote(deadTopic) + " must be a valid topic name";
            else if (retryTopic != null && !topicValid(ascii(retryTopic)))
                why = "policy retry_topic " + quote(retryTopic) + " is not a valid topic name";
            else if (backoffInitialMs < 0 || backoffMaxMs < backoffInitialMs
                     || backoffMaxMs > MAX_DELAY_MS)
                why = "policy backoff: 0 <= initial <= max <= 10 years (" + backoffInitialMs
                    + " ms, " + backoffMaxMs + " ms)";
            else if (!(multiplier >= 1.0 && multiplier <= 1000.0))
                why = "policy multiplier " + multiplier + " must be in 1 .. 1000";
            else if (!(jitter >= 0.0 && jitter <= 1.0))
                why = "policy jitter " + jitter + " must be in 0 .. 1";
            else if (maxAttempts < 1 || maxAttempts > 100)
                why = "policy max_attempts " + maxAttempts + " must be in 1 .. 100";
            if (why != null)
                throw new IllegalArgumentException(why);
        }
    }

    /** outcome "scheduled" (taskId, fireAtMs set) or "dead"; topic: the
     *  tier topic or the dead topic written; delivery: the send's future
     *  (wait on it, or commit the transaction, before the offset moves). */
    public record Result(String outcome, int attempt, String taskId, Long fireAtMs, String topic,
                         Future<RecordMetadata> delivery) {}

    /** Retries rec (consumed, its processing failed) under policy through
     *  producer, or dead-letters it; reason (may be null) says why it
     *  failed. Returns once the record is sent (not acknowledged). Throws
     *  IllegalArgumentException for a bad policy or target, KafkaException
     *  when the producer refuses the record. */
    public static Result retry(Producer<byte[], byte[]> producer, String prefix,
                               TreeMap<Long, String> tiers, ConsumerRecord<byte[], byte[]> rec,
                               Policy policy, String reason) {
        policy.check();
        long now = System.currentTimeMillis();

        // Where the record was first consumed and its failures so far: its
        // own coordinates on a first failure, else its retry headers.
        String topic = rec.topic();
        long partition = rec.partition(), offset = rec.offset();
        int failures = 0;
        byte[] history = new byte[0];
        String bad = null; // the malformed retry header, if any
        Headers in = rec.headers();
        if (in.lastHeader(ATTEMPT) != null) {
            long n = digits(last(in, ATTEMPT), 1000000);
            byte[] t = last(in, ORIG_TOPIC);
            long p = digits(last(in, ORIG_PARTITION), Integer.MAX_VALUE);
            long o = digits(last(in, ORIG_OFFSET), Long.MAX_VALUE);
            if (n < 1)
                bad = ATTEMPT;
            else if (t == null || !topicValid(t))
                bad = ORIG_TOPIC;
            else if (p < 0)
                bad = ORIG_PARTITION;
            else if (o < 0)
                bad = ORIG_OFFSET;
            if (bad == null) {
                failures = (int) n;
                topic = new String(t, StandardCharsets.US_ASCII);
                partition = p;
                offset = o;
                byte[] hist = last(in, FAILURES);
                if (hist != null)
                    history = hist;
            }
        }
        int attempt = bad != null ? 1 : failures + 1;

        // The user's headers, in order, repeated ones kept; kdelay's own
        // are set anew.
        List<Header> user = new ArrayList<>();
        for (Header h : in)
            if (!h.key().isEmpty() && !h.key().startsWith("kdelay-"))
                user.add(new RecordHeader(h.key(), h.value()));
        List<Header> retryHeaders = List.of(
            header(ATTEMPT, ascii(Integer.toString(attempt))),
            header(ORIG_TOPIC, ascii(topic)),
            header(ORIG_PARTITION, ascii(Long.toString(partition))),
            header(ORIG_OFFSET, ascii(Long.toString(offset))),
            header(FAILURES, historyAdd(history, attempt, now, reason)));

        if (bad != null || attempt > policy.maxAttempts) {
            List<Header> hs = new ArrayList<>(user);
            hs.addAll(retryHeaders);
            hs.add(header(DEAD_REASON, ascii(bad != null ? "bad-retry-header " + bad
                                                          : "retries-exhausted")));
            ProducerRecord<byte[], byte[]> dead =
                new ProducerRecord<>(policy.deadTopic, null, rec.key(), rec.value(), hs);
            return new Result("dead", attempt, null, null, policy.deadTopic, producer.send(dead));
        }

        String target = policy.retryTopic != null ? policy.retryTopic : topic;
        String id = retryId(topic, partition, offset, attempt, target);
        long fireAt = now + backoff(policy, attempt, ThreadLocalRandom.current().nextDouble());
        ProducerRecord<byte[], byte[]> task = Schedule.taskRecord(
            prefix, tiers, target, rec.key(), rec.value(), fireAt, id, user);
        for (Header h : retryHeaders)
            task.headers().add(h);
        return new Result("scheduled", attempt, id, fireAt, task.topic(), producer.send(task));
    }

    /** d(n) less jitter * d(n) * u, u in [0, 1), truncated to whole ms. */
    static long backoff(Policy p, int attempt, double u) {
        double d = p.backoffInitialMs * Math.pow(p.multiplier, attempt - 1);
        if (!(d <= p.backoffMaxMs))
            d = p.backoffMaxMs;
        return (long) (d - p.jitter * d * u);
    }

    /** "retry:<topic>:<partition>:<offset>:<attempt>[:<target>]" (target
     *  when not the original topic); longer than 128 bytes: "retry:" + the
     *  topic's first 64 characters + ":" + FNV-1a 64 of the whole long
     *  form in 16 hex digits + ":" + attempt. Every part is ASCII. */
    static String retryId(String topic, long partition, long offset, int attempt, String target) {
        String id = "retry:" + topic + ":" + partition + ":" + offset + ":" + attempt
            + (target.equals(topic) ? "" : ":" + target);
        if (id.length() <= ID_MAX)
            return id;
        return "retry:" + topic.substring(0, Math.min(64, topic.length())) + ":"
            + String.format("%016x", fnv1a(ascii(id))) + ":" + attempt;
    }

    static long fnv1a(byte[] data) {
        long h = FNV_BASIS;
        for (byte b : data)
            h = (h ^ (b & 0xff)) * FNV_PRIME; // wraps mod 2^64 as the C one
        return h;
    }

    /** The history with this failure appended, a line per failure:
     *  "attempt=N failed_at=MS reason=TEXT"; the reason's control bytes
     *  (0x00-0x1f, 0x7f) as spaces, cut at 200 bytes as the C library does. */
    static byte[] historyAdd(byte[] previous, int attempt, long now, String reason) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int end = 0; // the C library reads the previous text as a C string
        while (end < previous.length && previous[end] != 0)
            end++;
        b.write(previous, 0, end);
        if (previous.length > 0)
            b.write('\n');
        b.writeBytes(ascii("attempt=" + attempt + " failed_at=" + now + " reason="));
        byte[] why = (reason == null ? "" : reason).getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < why.length && i < REASON_MAX; i++)
            b.write((why[i] >= 0 && why[i] < 0x20) || why[i] == 0x7f ? ' ' : why[i]);
        return b.toByteArray();
    }

    /** The last value of header name: null when absent, empty when null. */
    static byte[] last(Headers hs, String name) {
        Header h = hs.lastHeader(name);
        return h == null ? null : h.value() == null ? new byte[0] : h.value();
    }

    /** Decimal digits only (at most 19), 0 .. max; -1 otherwise. */
    static long digits(byte[] v, long max) {
        if (v == null || v.length == 0 || v.length > 19)
            return -1;
        long n = 0;
        try {
            for (byte c : v) {
                if (c < '0' || c > '9')
                    return -1;
                n = Math.addExact(Math.multiplyExact(n, 10), c - '0');
            }
        } catch (ArithmeticException e) {
            return -1; // beyond 2^63 - 1
        }
        return n <= max ? n : -1;
    }

    /** A Kafka topic name: 1..249 of [A-Za-z0-9._-], not "." or "..". */
    static boolean topicValid(byte[] t) {
        if (t.length == 0 || t.length > 249 || (t.length <= 2 && t[0] == '.' && t[t.length - 1] == '.'))
            return false;
        for (byte c : t)
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                  || c == '.' || c == '_' || c == '-'))
                return false;
        return true;
    }

    private static Header header(String name, byte[] value) {
        return new RecordHeader(name, value);
    }

    /** Bytes of text; a non-ASCII character becomes '?' (then fails
     *  topicValid, as it should). */
    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    // ---- the command line ----

    static final String USAGE =
        "Usage: Retry --brokers B --group G --topic IN --dead-topic DEAD [--prefix kdelay]"
        + " [--tiers LADDER] [--backoff 1s] [--backoff-max 1h] [--multiplier 2] [--jitter 0.2]"
        + " [--max-attempts 5] [--retry-topic T] [--reason TEXT] [--count 1] [--timeout 30s]";

    private static int usage(String why) {
        System.err.println("Retry: error: " + why + "\n" + USAGE);
        return 2;
    }

    /** A value for a message: 'text'. */
    static String quote(String s) {
        return s == null ? "null" : "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    /** JSON string: every string printed is a topic name or a task id made
     *  of them, digits, ':' and hex, none of which needs escaping. */
    private static String json(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    static int run(String[] args) {
        String brokers = System.getenv().getOrDefault("KDELAY_BROKERS", "127.0.0.1:19092");
        String group = null, in = null, prefix = Schedule.DEFAULT_PREFIX, reason = "";
        TreeMap<Long, String> tiers;
        Policy policy = new Policy();
        int count = 1;
        long timeoutMs = 30000;
        String tiersText = Schedule.DEFAULT_TIERS;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("-h") || a.equals("--help")) {
                    System.out.println(USAGE);
                    return 0;
                }
                if (i + 1 >= args.length)
                    return usage(quote(a) + " needs a value");
                String v = args[++i];
                try {
                    switch (a) {
                    case "--brokers" -> brokers = v;
                    case "--group" -> group = v;
                    case "--topic" -> in = v;
                    case "--dead-topic" -> policy.deadTopic = v;
                    case "--retry-topic" -> policy.retryTopic = v;
                    case "--prefix" -> prefix = v;
                    case "--tiers" -> tiersText = v;
                    case "--backoff" -> policy.backoffInitialMs = Schedule.parseDuration(v);
                    case "--backoff-max" -> policy.backoffMaxMs = Schedule.parseDuration(v);
                    case "--multiplier" -> policy.multiplier = Double.parseDouble(v);
                    case "--jitter" -> policy.jitter = Double.parseDouble(v);
                    case "--max-attempts" -> policy.maxAttempts = Integer.parseInt(v);
                    case "--reason" -> reason = v;
                    case "--count" -> count = Integer.parseInt(v);
                    case "--timeout" -> timeoutMs = Schedule.parseDuration(v);
                    default -> {
                        return usage("unknown option " + quote(a));
                    }
                    }
                } catch (IllegalArgumentException e) { // NumberFormatException too
                    return usage(a + " " + quote(v) + ": not a valid value");
                }
            }
            if (group == null || group.isEmpty() || in == null || policy.deadTopic == null)
                return usage("--group, --topic and --dead-topic are required");
            if (!topicValid(ascii(in)))
                return usage("--topic " + quote(in) + " is not a valid topic name");
            if (count < 1)
                return usage("--count " + count + " must be 1 or more");
            tiers = Schedule.parseTiers(tiersText);
            policy.check();
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        }

        Properties pc = new Properties();
        pc.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        pc.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        pc.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        pc.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        pc.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");

        int handled = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(pc, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             Producer<byte[], byte[]> producer =
                 new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            consumer.subscribe(List.of(in));
            while (handled < count) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0)
                    break;
                for (ConsumerRecord<byte[], byte[]> rec :
                     consumer.poll(Duration.ofMillis(Math.min(left, 500)))) {
                    if (handled == count)
                        break; // the rest stays uncommitted: read again next time
                    // "Processing failed": retry the record, wait until
                    // Kafka has it, and only then move the offset past it.
                    Result r = retry(producer, prefix, tiers, rec, policy, reason);
                    r.delivery().get();
                    consumer.commitSync(Map.of(new TopicPartition(rec.topic(), rec.partition()),
                                               new OffsetAndMetadata(rec.offset() + 1)));
                    System.out.println("{\"topic\":" + json(rec.topic()) + ",\"partition\":"
                        + rec.partition() + ",\"offset\":" + rec.offset() + ",\"outcome\":"
                        + json(r.outcome()) + ",\"attempt\":" + r.attempt() + ",\"task_id\":"
                        + json(r.taskId()) + ",\"fire_at_ms\":" + r.fireAtMs() + ",\"to\":"
                        + json(r.topic()) + "}");
                    System.out.flush();
                    handled++;
                }
            }
        } catch (Exception e) {
            System.err.println("Retry: error after " + handled + " record(s): " + e);
            return 1;
        }
        if (handled < count) {
            System.err.println("Retry: timed out: handled " + handled + " of " + count
                               + " record(s)");
            return 1;
        }
        return 0;
    }

    public static void main(String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel",
                           System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        System.exit(run(args));
    }
}
