// SPDX-License-Identifier: Apache-2.0
/*
 * Schedules a kdelay task from Java, by the wire format alone
 * (docs/wire-format.md): one record in the tier topic <prefix>.tier.<tier>
 * with the headers kdelay-v, kdelay-id, kdelay-target and kdelay-fire-at.
 * Key, value and other headers are the user's and are delivered unchanged
 * to the target topic when the task is due. The tier is chosen as
 * docs/wire-format.md "Choosing the tier" says: the largest tier delay
 * <= fire-at - now, else the smallest tier.
 *
 * Build (examples/java/), then run:
 *
 *   mvn -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 *   java -cp "target/classes:$(cat target/classpath.txt)" Schedule \
 *       --brokers 127.0.0.1:19092 \
 *       --topic orders.reminders --key order-42 --value 'ship it' --delay 30s \
 *       --header trace=abc
 *
 * prints the task id (a ULID unless --id gives one); exit 0 once Kafka has
 * acknowledged the record, 1 when it did not, 2 on bad arguments. In an
 * application: Schedule.schedule(producer, prefix, tiers, target, key,
 * value, fireAtMs, taskId, headers, onDelivery) on your own idempotent
 * producer; Schedule.taskRecord(...) builds the record without sending it
 * (Retry.java adds its headers to it).
 */
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Schedule {
    /** kdelay's default ladder (property `tiers`, src/lib/shared/conf_props.c). */
    public static final String DEFAULT_TIERS =
        "1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,1d,2d12h,7d";
    public static final String DEFAULT_PREFIX = "kdelay";

    private static final String[] UNITS = {"d", "h", "m", "s", "ms"};
    private static final long[] UNIT_MS = {86400000L, 3600000L, 60000L, 1000L, 1L};
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|d|h|m|s)");
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9._-]{1,249}");
    private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static long ulidMs = -1, ulidHi, ulidLo; // last ms; random part: 16 + 64 bits

    /** "250ms", "30s", "1h30m" (largest unit first) to milliseconds. */
    public static long parseDuration(String text) {
        Matcher m = DURATION.matcher(text);
        long total = 0;
        int pos = 0, last = -1;
        while (pos < text.length()) {
            if (!m.find(pos) || m.start() != pos)
                throw new IllegalArgumentException(text + " is not a duration (e.g. 30s, 5m)");
            int unit = List.of(UNITS).indexOf(m.group(2));
            if (unit <= last)
                throw new IllegalArgumentException(text + ": units must come largest first, once");
            total += Long.parseLong(m.group(1)) * UNIT_MS[unit];
            last = unit;
            pos = m.end();
        }
        if (text.isEmpty())
            throw new IllegalArgumentException("empty duration");
        return total;
    }

    /** Milliseconds to canonical duration text, the tier's name (90000: "1m30s"). */
    public static String formatDuration(long ms) {
        if (ms == 0)
            return "0s";
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < UNITS.length; i++) {
            if (ms >= UNIT_MS[i]) {
                b.append(ms / UNIT_MS[i]).append(UNITS[i]);
                ms %= UNIT_MS[i];
            }
        }
        return b.toString();
    }

    /** "1s,5s,1m" to {1000: "1s", 5000: "5s", 60000: "1m"}, ascending. */
    public static TreeMap<Long, String> parseTiers(String text) {
        TreeMap<Long, String> tiers = new TreeMap<>();
        for (String t : text.split(",")) {
            long ms = parseDuration(t.trim());
            if (ms <= 0)
                throw new IllegalArgumentException("tier " + t + " must be above 0");
            tiers.put(ms, formatDuration(ms));
        }
        return tiers;
    }

    /** The largest tier whose delay <= remainingMs, else the smallest. */
    public static String chooseTier(TreeMap<Long, String> tiers, long remainingMs) {
        Map.Entry<Long, String> e = tiers.floorEntry(remainingMs);
        return e != null ? e.getValue() : tiers.firstEntry().getValue();
    }

    /** A ULID as the library makes them: 48-bit ms time, 80 random bits,
     *  26 Crockford base32 digits, strictly increasing within this process. */
    public static synchronized String newUlid() {
        long now = System.currentTimeMillis();
        if (now <= ulidMs) {
            if (++ulidLo == 0 && (ulidHi = (ulidHi + 1) & 0xFFFF) == 0)
                ulidMs++;
        } else {
            ulidMs = now;
            ulidHi = RANDOM.nextInt(1 << 16);
            ulidLo = RANDOM.nextLong();
        }
        // 128 bits: hi64 = time(48) | random(16), lo64 = random(64).
        long hi = (ulidMs << 16) | ulidHi, lo = ulidLo;
        char[] out = new char[26];
        for (int d = 25; d >= 0; d--) {
            out[d] = CROCKFORD[(int) (lo & 31)];
            lo = (lo >>> 5) | (hi << 59);
            hi >>>= 5;
        }
        return new String(out);
    }

    /** Throws IllegalArgumentException for what a forwarder would
     *  dead-letter, or what the library refuses (kdelay- user headers). */
    public static void checkTask(String prefix, String target, long fireAtMs, String taskId,
                                 List<String[]> headers) {
        if (!TOPIC.matcher(target).matches() || target.equals(".") || target.equals(".."))
            throw new IllegalArgumentException("invalid target topic " + target);
        if (target.startsWith(prefix + ".tier.") || target.equals(prefix + ".dead"))
            throw new IllegalArgumentException(target + " is one of kdelay's own topics");
        if (fireAtMs < 0)
            throw new IllegalArgumentException("fire-at out of range");
        if (taskId != null) {
            byte[] raw = taskId.getBytes(StandardCharsets.UTF_8);
            boolean bad = raw.length < 1 || raw.length > 128;
            for (byte c : raw)
                bad |= (c >= 0 && c < 0x20) || c == 0x7F;
            if (bad)
                throw new IllegalArgumentException(
                    "task id must be 1..128 bytes of UTF-8 without control characters");
        }
        for (String[] h : headers)
            if (h[0].startsWith("kdelay-"))
                throw new IllegalArgumentException(
                    "header " + h[0] + ": the kdelay- namespace is reserved");
    }

    /** Sends the task record on producer (enable.idempotence=true,
     *  acks=all) and returns the task id (taskId, or a new ULID when null).
     *  key, value: null for a null key/value; headers: {name, value} pairs.
     *  Does not wait: flush the producer and check onDelivery (may be null). */
    public static String schedule(Producer<byte[], byte[]> producer, String prefix,
                                  TreeMap<Long, String> tiers, String target, byte[] key,
                                  byte[] value, long fireAtMs, String taskId,
                                  List<String[]> headers, Callback onDelivery) {
        String id = taskId != null ? taskId : newUlid();
        List<Header> raw = new ArrayList<>();
        for (String[] h : headers)
            raw.add(new RecordHeader(h[0], utf8(h[1])));
        producer.send(taskRecord(prefix, tiers, target, key, value, fireAtMs, id, raw),
                      onDelivery);
        return id;
    }

    /** The task record itself, not sent: in the tier topic for fireAtMs,
     *  the wire headers, then headers (the user's, bytes as they are, in
     *  order). Retry.java adds its own headers to it before sending. */
    public static ProducerRecord<byte[], byte[]> taskRecord(String prefix,
                                                            TreeMap<Long, String> tiers,
                                                            String target, byte[] key,
                                                            byte[] value, long fireAtMs,
                                                            String id, List<Header> headers) {
        List<String[]> names = new ArrayList<>();
        for (Header h : headers)
            names.add(new String[] {h.key(), null});
        checkTask(prefix, target, fireAtMs, id, names);
        String tier = chooseTier(tiers, fireAtMs - System.currentTimeMillis());
        ProducerRecord<byte[], byte[]> r =
            new ProducerRecord<>(prefix + ".tier." + tier, key, value);
        r.headers().add(new RecordHeader("kdelay-v", utf8("1")));
        r.headers().add(new RecordHeader("kdelay-id", utf8(id)));
        r.headers().add(new RecordHeader("kdelay-target", utf8(target)));
        r.headers().add(new RecordHeader("kdelay-fire-at", utf8(Long.toString(fireAtMs))));
        for (Header h : headers)
            r.headers().add(h);
        return r;
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static long parseAt(String text) {
        if (text.matches("\\d+"))
            return Long.parseLong(text);
        return OffsetDateTime.parse(text).toInstant().toEpochMilli();
    }

    private static final String USAGE = "Usage: Schedule --topic T (--at TIME | --delay D)"
        + " [--brokers B] [--prefix P] [--tiers LIST] [--key K] [--value V] [--id ID]"
        + " [--header NAME=VALUE]...";

    private static int usage(String why) {
        System.err.println("Schedule: " + why + "\n" + USAGE);
        return 2;
    }

    static int run(String[] args) {
        String brokers = System.getenv().getOrDefault("KDELAY_BROKERS", "127.0.0.1:19092");
        String prefix = DEFAULT_PREFIX, tiersText = DEFAULT_TIERS, topic = null, key = null,
               value = null, at = null, delay = null, id = null;
        List<String[]> headers = new ArrayList<>();
        TreeMap<Long, String> tiers;
        long fireAt;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("-h") || a.equals("--help")) {
                    System.out.println(USAGE + "\nSchedules a kdelay task (wire format v1); prints its id.");
                    return 0;
                }
                if (i + 1 >= args.length)
                    return usage(a + " needs a value");
                String v = args[++i];
                switch (a) {
                case "--brokers" -> brokers = v;
                case "--prefix" -> prefix = v;
                case "--tiers" -> tiersText = v;
                case "--topic" -> topic = v;
                case "--key" -> key = v;
                case "--value" -> value = v;
                case "--at" -> at = v;
                case "--delay" -> delay = v;
                case "--id" -> id = v;
                case "--header" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0)
                        return usage("--header " + v + ": want NAME=VALUE");
                    headers.add(new String[] {v.substring(0, eq), v.substring(eq + 1)});
                }
                default -> {
                    return usage("unknown option " + a);
                }
                }
            }
            if (topic == null || (at == null) == (delay == null))
                return usage("give --topic and exactly one of --at and --delay");
            tiers = parseTiers(tiersText);
            fireAt = at != null ? parseAt(at) : System.currentTimeMillis() + parseDuration(delay);
            checkTask(prefix, topic, fireAt, id, headers);
        } catch (IllegalArgumentException | java.time.format.DateTimeParseException e) {
            return usage(e.getMessage());
        }

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        AtomicReference<Exception> failure = new AtomicReference<>();
        AtomicBoolean acked = new AtomicBoolean();
        String taskId = id;
        try (Producer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            taskId = schedule(producer, prefix, tiers, topic, utf8(key), utf8(value), fireAt, id,
                              headers, (md, e) -> {
                                  if (e != null)
                                      failure.set(e);
                                  else
                                      acked.set(true);
                              });
            producer.flush();
        } catch (Exception e) {
            failure.compareAndSet(null, e);
        }
        if (failure.get() != null || !acked.get()) {
            System.err.println("Schedule: task " + (taskId != null ? taskId + " " : "")
                               + "not scheduled: " + failure.get());
            return 1;
        }
        System.out.println(taskId);
        return 0;
    }

    public static void main(String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel",
                           System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        System.exit(run(args));
    }
}
