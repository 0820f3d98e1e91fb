// SPDX-License-Identifier: Apache-2.0
/*
 * Retries a consumed Kafka record later, without blocking its partition:
 * kdelay_retry()'s header protocol (docs/retries.md) on kafka-clients. The
 * record is scheduled again as a kdelay task (Schedule.taskRecord) with its
 * key, value and user headers, due after an exponential backoff with
 * jitter, to its original topic (or the policy's retry topic); once its
 * failures exceed the policy's maximum it goes to the dead-letter topic
 * instead. Both carry the retry headers:
 *
 *   kdelay-attempt              failures so far, this one included ("1" first)
 *   kdelay-original-topic       where the record was first consumed
 *   kdelay-original-partition   (kept from the first failure on)
 *   kdelay-original-offset
 *   kdelay-failures             one line per failure, oldest first:
 *                               "attempt=N failed_at=EPOCH_MS reason=TEXT"
 *
 * and a dead letter kdelay-dead-reason "retries-exhausted" (or
 * "bad-retry-header NAME": malformed retry headers are dead-lettered at
 * once). The consumed record's other kdelay-* headers are dropped.
 *
 * In an application: Retry.retry(producer, prefix, tiers, record, policy,
 * reason) for a record whose processing failed, inside the transaction that
 * also sends the consumed offsets if the producer is transactional (the
 * retry is written if and only if they are committed); else (idempotent,
 * acks=all) wait for the returned delivery before committing the offset. A
 * crash in between writes the retry again under the same task id, so it
 * still fires once. As a command (examples/java/; every record "fails"):
 *
 *   mvn -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 *   java -cp "target/classes:$(cat target/classpath.txt)" Retry --brokers 127.0.0.1:19092 \
 *       --group app --topic orders --dead-topic orders.dlt --max-attempts 3 --count 10
 *
 * prints a JSON line per record once retried, acknowledged and its offset
 * committed; exit 0 after --count records, 1 on --timeout or a Kafka error,
 * 2 on bad arguments. --tiers must be the forwarders' ladder.
 */
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.*;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.*;

public final class Retry {
    static final String ATTEMPT = "kdelay-attempt", ORIG_TOPIC = "kdelay-original-topic",
        ORIG_PARTITION = "kdelay-original-partition", ORIG_OFFSET = "kdelay-original-offset",
        FAILURES = "kdelay-failures", DEAD_REASON = "kdelay-dead-reason";
    static final int REASON_MAX = 200; // bytes of reason kept per failure
    // FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211), as
    // retry.c and retry.py hash a long retry id.
    static final long FNV_BASIS = 0xcbf29ce484222325L, FNV_PRIME = 0x100000001b3L;

    /** Exponential backoff with jitter: the n-th retry is due d(n) =
     *  min(backoffMaxMs, backoffInitialMs * multiplier^(n-1)) after the
     *  failure, less a random part of up to jitter * d(n). */
    public static final class Policy {
        public long backoffInitialMs = 1000, backoffMaxMs = 3600 * 1000;
        public double multiplier = 2.0, jitter = 0.2; // 1 .. 1000, 0 .. 1
        public int maxAttempts = 5;        // failures retried (1 .. 100); the next is dead
        public String retryTopic;          // null: the original topic
        public String deadTopic;           // required

        /** Throws IllegalArgumentException as kdelay_retry()'s policy check. */
        public void check() {
            String why = deadTopic == null || !topicValid(deadTopic) ? "dead_topic is not a valid topic name"
                : retryTopic != null && !topicValid(retryTopic) ? "retry_topic is not a valid topic name"
                : backoffInitialMs < 0 || backoffMaxMs < backoffInitialMs
                  || backoffMaxMs > 10L * 365 * 86400000 ? "backoff: 0 <= initial <= max <= 10 years"
                : !(multiplier >= 1.0 && multiplier <= 1000.0) ? "multiplier must be in 1 .. 1000"
                : !(jitter >= 0.0 && jitter <= 1.0) ? "jitter must be in 0 .. 1"
                : maxAttempts < 1 || maxAttempts > 100 ? "max_attempts must be in 1 .. 100" : null;
            if (why != null)
                throw new IllegalArgumentException("policy " + why);
        }
    }

    /** outcome "scheduled" (taskId, fireAtMs set) or "dead"; topic: the one written; delivery:
     *  the send's future (wait on it, or commit the transaction, before the offset moves). */
    public record Result(String outcome, int attempt, String taskId, Long fireAtMs, String topic,
                         Future<RecordMetadata> delivery) {}

    /** Retries rec, whose processing failed for reason (may be null), or
     *  dead-letters it. Returns once the record is sent (not acknowledged).
     *  IllegalArgumentException: a bad policy or target; KafkaException: the
     *  producer refused the record. */
    public static Result retry(Producer<byte[], byte[]> producer, String prefix,
                               TreeMap<Long, String> tiers, ConsumerRecord<byte[], byte[]> rec,
                               Policy policy, String reason) {
        policy.check();
        long now = System.currentTimeMillis();
        // Where the record was first consumed and its failures so far: its own
        // coordinates on a first failure, else its retry headers (the last of
        // each), all of them well-formed or the record is dead-lettered.
        String topic = rec.topic(), bad = null;
        long partition = rec.partition(), offset = rec.offset(), failures = 0;
        byte[] history = new byte[0];
        Headers in = rec.headers();
        if (in.lastHeader(ATTEMPT) != null) {
            long n = number(in, ATTEMPT, 1000000), p = number(in, ORIG_PARTITION, Integer.MAX_VALUE),
                o = number(in, ORIG_OFFSET, Long.MAX_VALUE);
            String t = text(in, ORIG_TOPIC);
            bad = n < 1 ? ATTEMPT : t == null || !topicValid(t) ? ORIG_TOPIC
                : p < 0 ? ORIG_PARTITION : o < 0 ? ORIG_OFFSET : null;
            if (bad == null) {
                failures = n;
                topic = t;
                partition = p;
                offset = o;
                Header h = in.lastHeader(FAILURES);
                history = h == null || h.value() == null ? history : h.value();
            }
        }
        int attempt = bad != null ? 1 : (int) failures + 1;

        // The user's headers, in order, repeated ones kept; kdelay's own are set anew.
        List<Header> user = new ArrayList<>();
        for (Header h : in)
            if (!h.key().isEmpty() && !h.key().startsWith("kdelay-"))
                user.add(new RecordHeader(h.key(), h.value()));
        List<Header> ours = List.of(
            new RecordHeader(ATTEMPT, ascii(Integer.toString(attempt))),
            new RecordHeader(ORIG_TOPIC, ascii(topic)),
            new RecordHeader(ORIG_PARTITION, ascii(Long.toString(partition))),
            new RecordHeader(ORIG_OFFSET, ascii(Long.toString(offset))),
            new RecordHeader(FAILURES, historyAdd(history, attempt, now, reason)));

        if (bad != null || attempt > policy.maxAttempts) {
            var dead = new ProducerRecord<>(policy.deadTopic, null, rec.key(), rec.value(), user);
            ours.forEach(dead.headers()::add);
            dead.headers().add(DEAD_REASON,
                               ascii(bad == null ? "retries-exhausted" : "bad-retry-header " + bad));
            return new Result("dead", attempt, null, null, policy.deadTopic, producer.send(dead));
        }
        String target = policy.retryTopic != null ? policy.retryTopic : topic;
        String id = retryId(topic, partition, offset, attempt, target);
        long fireAt = now + backoff(policy, attempt, ThreadLocalRandom.current().nextDouble());
        var task = Schedule.taskRecord(prefix, tiers, target, rec.key(), rec.value(), fireAt, id, user);
        ours.forEach(task.headers()::add);
        return new Result("scheduled", attempt, id, fireAt, task.topic(), producer.send(task));
    }

    /** d(n) less jitter * d(n) * u, u in [0, 1), truncated to whole ms. */
    static long backoff(Policy p, int attempt, double u) {
        double d = Math.min(p.backoffMaxMs, p.backoffInitialMs * Math.pow(p.multiplier, attempt - 1));
        return (long) (d - p.jitter * d * u);
    }

    /** "retry:<topic>:<partition>:<offset>:<attempt>[:<target>]" (target when
     *  not the original topic); longer than 128 bytes: "retry:" + the topic's
     *  first 64 characters + ":" + FNV-1a 64 of the whole long form in 16 hex
     *  digits + ":" + attempt. Every part is ASCII. */
    static String retryId(String topic, long partition, long offset, int attempt, String target) {
        String id = "retry:" + topic + ":" + partition + ":" + offset + ":" + attempt
            + (target.equals(topic) ? "" : ":" + target);
        if (id.length() <= 128)
            return id;
        long h = FNV_BASIS;
        for (byte b : ascii(id))
            h = (h ^ (b & 0xff)) * FNV_PRIME; // wraps mod 2^64 as the C one does
        return "retry:" + topic.substring(0, Math.min(64, topic.length())) + ":"
            + String.format("%016x", h) + ":" + attempt;
    }

    /** The history with this failure's line appended, as the C library writes it: up
     *  to a NUL, the reason's control bytes (0x00-0x1f, 0x7f) as spaces, cut at 200 bytes. */
    static byte[] historyAdd(byte[] previous, int attempt, long now, String reason) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int end = 0;
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

    /** The last header name's value, a byte a char (so non-ASCII never
     *  passes a check); null when absent, "" when null. */
    static String text(Headers hs, String name) {
        Header h = hs.lastHeader(name);
        return h == null ? null : h.value() == null ? "" : new String(h.value(), StandardCharsets.ISO_8859_1);
    }

    /** The last header name's value if decimal digits only, 0 .. max; else -1. */
    static long number(Headers hs, String name, long max) {
        String v = text(hs, name);
        try {
            return v != null && v.matches("[0-9]{1,19}") && Long.parseLong(v) <= max ? Long.parseLong(v) : -1;
        } catch (NumberFormatException e) {
            return -1; // beyond 2^63 - 1
        }
    }

    /** A Kafka topic name: 1..249 of [A-Za-z0-9._-], not "." or "..". */
    static boolean topicValid(String t) {
        return t.matches("[A-Za-z0-9._-]{1,249}") && !t.equals(".") && !t.equals("..");
    }

    private static byte[] ascii(String s) { return s.getBytes(StandardCharsets.US_ASCII); }

    // ---- the command line ----

    static final String USAGE =
        "usage: Retry --brokers B --group G --topic IN --dead-topic DEAD [--prefix kdelay]"
        + " [--tiers LADDER] [--backoff 1s] [--backoff-max 1h] [--multiplier 2] [--jitter 0.2]"
        + " [--max-attempts 5] [--retry-topic T] [--reason TEXT] [--count 1] [--timeout 30s]";

    private static int usage(String why) {
        System.err.println(USAGE + "\nRetry: error: " + why);
        return 2;
    }

    /** JSON string: all printed are topic names or task ids: nothing needs escaping. */
    private static String json(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    static int run(String[] args) {
        String brokers = System.getenv().getOrDefault("KDELAY_BROKERS", "127.0.0.1:19092");
        String group = null, in = null, prefix = Schedule.DEFAULT_PREFIX, reason = "";
        String tiersText = Schedule.DEFAULT_TIERS;
        Policy policy = new Policy();
        int count = 1;
        long timeoutMs = 30000;
        TreeMap<Long, String> tiers;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i], v = i + 1 < args.length ? args[++i] : null;
                if (a.equals("-h") || a.equals("--help")) {
                    System.out.println(USAGE);
                    return 0;
                } else if (v == null) {
                    return usage(a + " needs a value");
                }
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
                        return usage("unknown option " + a);
                    }
                    }
                } catch (IllegalArgumentException e) { // NumberFormatException too
                    return usage(a + " " + v + ": not a valid value");
                }
            }
            if (group == null || group.isEmpty() || in == null || policy.deadTopic == null)
                return usage("--group, --topic and --dead-topic are required");
            if (!topicValid(in) || count < 1)
                return usage("--topic must be a valid topic name, --count 1 or more");
            tiers = Schedule.parseTiers(tiersText);
            policy.check();
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        }

        Map<String, Object> pc = Map.of("bootstrap.servers", brokers, "group.id", group, "auto.offset.reset",
            "earliest", "isolation.level", "read_committed", "enable.auto.commit", "false");
        Map<String, Object> pp = Map.of("bootstrap.servers", brokers, "enable.idempotence", "true",
            "acks", "all", "delivery.timeout.ms", "30000", "request.timeout.ms", "10000", "linger.ms", "0");
        int handled = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (var consumer = new KafkaConsumer<>(pc, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             var producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            consumer.subscribe(List.of(in));
            for (long left; handled < count && (left = deadline - System.currentTimeMillis()) > 0; ) {
                for (var rec : consumer.poll(Duration.ofMillis(Math.min(left, 500)))) {
                    if (handled == count)
                        break; // the rest stays uncommitted: read again next time
                    // "Processing failed": retry the record, wait until Kafka
                    // has it, and only then move the offset past it.
                    Result r = retry(producer, prefix, tiers, rec, policy, reason);
                    r.delivery().get();
                    consumer.commitSync(Map.of(new TopicPartition(rec.topic(), rec.partition()),
                                               new OffsetAndMetadata(rec.offset() + 1)));
                    System.out.println("{\"topic\":" + json(rec.topic()) + ",\"partition\":" + rec.partition()
                        + ",\"offset\":" + rec.offset() + ",\"outcome\":" + json(r.outcome())
                        + ",\"attempt\":" + r.attempt() + ",\"task_id\":" + json(r.taskId())
                        + ",\"fire_at_ms\":" + r.fireAtMs() + ",\"to\":" + json(r.topic()) + "}");
                    System.out.flush();
                    handled++;
                }
            }
        } catch (Exception e) {
            System.err.println("Retry: error after " + handled + " record(s): " + e);
            return 1;
        }
        if (handled < count)
            System.err.println("Retry: timed out: handled " + handled + " of " + count + " record(s)");
        return handled < count ? 1 : 0;
    }

    public static void main(String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel",
                           System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        System.exit(run(args));
    }
}
