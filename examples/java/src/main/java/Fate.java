// SPDX-License-Identifier: Apache-2.0
/*
 * Cancels a kdelay task, or asks its fate, from Java: the client side of
 * the fate protocol (docs/fate-protocol.md, "Clients") on plain JDBC and
 * MariaDB Connector/J. A cancel is one plain INSERT of a CANCELLED row
 * (INSERT ... SELECT ... FROM DUAL WHERE NOT EXISTS a pending journal in
 * kdelay_reconcile, schema 9); a duplicate key (1062) means a row was there
 * first, and reading it back tells too late (FIRING/FIRED) or dead (DEAD)
 * from cancelled already. Whichever insert lands first -- the cancel or a
 * forwarder's claim -- decides, so "cancelled" is final. While a journal is
 * pending ("While a reconciliation is pending": fires made without a claim
 * through a fate-store outage may not be in the fate table yet) the insert
 * adds no row; the read-back then answers too late (FIRING/FIRED) or dead
 * (DEAD), and anything else (no row, CANCELLED) is unknown: nothing was
 * recorded, retry. On a schema before 9 (no kdelay_reconcile) the cancel is
 * the plain INSERT ... VALUES of the releases before. Build (examples/java/)
 * and run:
 *
 *   mvn -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 *   KDELAY_MYSQL_PASSWORD=... java -cp "target/classes:$(cat target/classpath.txt)" Fate \
 *       [--mysql mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE]] \
 *       [--not-before EPOCH_MS] cancel|status ID...
 *
 * --mysql defaults to $KDELAY_MYSQL_URL; the password is the URL's, else
 * $KDELAY_MYSQL_PASSWORD, and never printed. It connects and checks the
 * schema, waits for --not-before, then prints a JSON line per id: for
 * cancel {"id","outcome","fate"[,"error"]} (outcome cancelled, too_late,
 * dead or unknown; fate the state read back, null when the insert won or
 * the outcome is unknown), for status what `kdelayctl status --json` prints
 * ({"id","error"} on failure). Exit 0: all cancelled / answered; 1: an
 * outcome unknown (a pending reconciliation's too) or no connection (retry:
 * a cancel is idempotent); else 3: a task was too late; 5: one was
 * dead-lettered; 2: bad arguments. Needs a UTF-8 locale for non-ASCII ids.
 *
 * As a library: connect(url, password) (the password used when the URL has
 * none), then cancel(c, id) (one try; throws Reconciling, an Unknown, while
 * a reconciliation is pending) and status(c, id); new Session(url,
 * password).run(Fate::cancel, id) adds the protocol's retries.
 */
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.*;
import java.util.regex.*;

public final class Fate {
    // The kdelay release whose protocol this file follows: a schema version
    // above 6 is usable only while its compat_floor (X.Y.Z, compared as
    // numbers) is at or below it.
    static final int[] PROTOCOL_RELEASE = {0, 4, 0};
    static final int SCHEMA_MIN = 5; // the DEAD state and dead_reason
    static final int SCHEMA_FLOORS_FROM = 6; // compat_floor exists from version 6
    static final int SCHEMA_RUNS = 10; // kdelay_fired_run: a FIRING row a run covers is FIRED
    // The schema version each connection's check found (status reads it).
    static final Map<Connection, Long> SCHEMA = Collections.synchronizedMap(new WeakHashMap<>());
    static final String STATUS_SQL = "SELECT state, fire_at_ms, owner, decided_at_ms, "
        + "updated_at_ms, dead_reason FROM kdelay_fate WHERE task_id = ?";
    // From schema 10 (docs/fate-protocol.md "Runs of delivered claims"): the
    // same row and whether a run of delivered claims covers it (1: FIRED).
    static final String COVERED_SQL = "COALESCE(kdelay_fate.state = 'FIRING' "
        + "AND kdelay_fate.owner LIKE '_%:_%:_%' AND kdelay_fate.owner NOT LIKE '%:%:%:%' "
        + "AND CAST(CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) AS BINARY) "
        + "= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS BINARY) "
        + "AND (SELECT r.seq_hi FROM kdelay_fired_run r "
        + "WHERE r.owner_prefix = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) "
        + "AND r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) "
        + "AND kdelay_fate.task_id IS NOT NULL ORDER BY r.seq_lo DESC LIMIT 1) "
        + ">= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED), 0)";
    static final String STATUS_SQL_RUNS = "SELECT state, fire_at_ms, owner, decided_at_ms, "
        + "updated_at_ms, dead_reason, " + COVERED_SQL + " AS delivered FROM kdelay_fate WHERE task_id = ?";
    // Errors after which the same statement may be sent again on a new
    // connection: connection lost (client 2006, 2013; server shutdown 1053),
    // a read-only server during a failover (1290, 1836), lock wait and
    // deadlock (1205, 1213). Connector/J reports a lost connection as SQLState
    // 08xxx instead of 2006/2013: retried too, once a connection was open
    // (failing to connect at all, also 08xxx, is not).
    static final Set<Integer> RETRYABLE = Set.of(2006, 2013, 1053, 1290, 1836, 1205, 1213);
    static final int ATTEMPTS = 3, RETRY_PAUSE_MS = 250;
    static final int DUP_KEY = 1062, NO_SUCH_TABLE = 1146;
    // The cancel: one statement that inserts CANCELLED only while no journal
    // is pending (schema 9). Under REPEATABLE READ its subquery takes shared
    // locks, so a concurrent mark waits for it or it for the mark.
    static final String CANCEL_SQL = "INSERT INTO kdelay_fate (task_id, state, decided_at_ms, "
        + "updated_at_ms) SELECT ?, 'CANCELLED', ?, ? FROM DUAL WHERE NOT EXISTS "
        + "(SELECT 1 FROM kdelay_reconcile WHERE pending_since_ms IS NOT NULL)";
    // A schema before 9 has no kdelay_reconcile, and no forwarder of a release
    // that marks journals runs on it: the plain INSERT of the releases before.
    static final String CANCEL_SQL_BEFORE_9 = "INSERT INTO kdelay_fate "
        + "(task_id, state, decided_at_ms, updated_at_ms) VALUES (?, 'CANCELLED', ?, ?)";
    static final String RECONCILING = "not known yet: a reconciliation after a fate-store outage is "
        + "pending, and this task may have been fired without a claim during it; nothing was recorded: "
        + "retry (kdelayctl status shows the pending reconciliation)";

    /** The outcome is unknown: the cancel may or may not have landed. */
    public static class Unknown extends Exception { public Unknown(String m) { super(m); } }
    /** Not known yet: a journal is pending in kdelay_reconcile (fires made
     *  without a claim through a fate-store outage may not be applied yet),
     *  so the cancel recorded nothing. Retry. */
    public static class Reconciling extends Unknown { public Reconciling(String m) { super(m); } }
    /** The database's schema is not one this client can use. */
    public static class SchemaException extends Exception { public SchemaException(String m) { super(m); } }

    /** --mysql URL, parsed; password null when the URL has none. */
    public record MysqlUrl(String user, String password, String host, int port, String db,
                           String sslMode, String sslCa) {
        // The user info ends at the last '@', so a password may hold '@', '/'
        // or '?' unencoded; an IPv6 host goes in brackets ([::1]:3306).
        static final Pattern FORM = Pattern.compile("mysql://([^:]+)(?::(.*))?@"
            + "(\\[[^\\]/?@]+\\]|[^\\[\\]:/?@]+)(?::([0-9]{1,5}))?(?:/([^?]*))?(?:\\?(.*))?");

        /** Throws IllegalArgumentException, never with the password in it. */
        public static MysqlUrl parse(String url) {
            Matcher m = FORM.matcher(url);
            if (!m.matches())
                throw new IllegalArgumentException(
                    "want mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE]");
            int port = m.group(4) == null ? 3306 : Integer.parseInt(m.group(4));
            String db = m.group(5) == null ? "" : pctDecode(m.group(5)), mode = "PREFERRED", ca = null;
            if (port < 1 || port > 65535 || db.contains("/"))
                throw new IllegalArgumentException("want a port in 1..65535, a database name without '/'");
            for (String kv : m.group(6) == null ? new String[0] : m.group(6).split("&", -1)) {
                String[] nv = kv.split("=", 2);
                String value = nv.length == 2 ? pctDecode(nv[1]) : "";
                if (nv[0].equals("ssl-mode") && List.of("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA",
                        "VERIFY_IDENTITY").contains(value.toUpperCase(Locale.ROOT)))
                    mode = value.toUpperCase(Locale.ROOT);
                else if (nv[0].equals("ssl-ca") && !value.isEmpty())
                    ca = value;
                else
                    throw new IllegalArgumentException("URL parameter " + jsonString(kv) + ": want ssl-mode="
                        + "DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY or ssl-ca=FILE");
            }
            if (mode.startsWith("VERIFY_") && ca == null)
                throw new IllegalArgumentException("ssl-mode " + mode + " needs ssl-ca=FILE");
            return new MysqlUrl(pctDecode(m.group(1)), m.group(2) == null ? null : pctDecode(m.group(2)),
                                m.group(3), port, db.isEmpty() ? "kdelay" : db, mode, ca);
        }

        @Override
        public String toString() { // never the password
            return "mysql://" + user + (password == null ? "" : ":***") + "@" + host + ":" + port + "/" + db;
        }
    }

    private static String pctDecode(String s) {
        try { // URLDecoder would turn '+' into a space: keep it a '+'
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) { // its message may quote the password
            throw new IllegalArgumentException("bad percent-encoding in the URL");
        }
    }

    /** A new connection, for ready(); password: used when the URL has none. */
    public static Connection open(MysqlUrl u, String password) throws SQLException {
        String pass = u.password() != null ? u.password() : password;
        String jdbc = "jdbc:mariadb://" + u.host() + ":" + u.port() + "/"; // the db: ready()
        Properties p = new Properties();
        p.setProperty("user", u.user());
        if (pass != null)
            p.setProperty("password", pass);
        p.setProperty("connectTimeout", "10000"); // ms
        p.setProperty("socketTimeout", "30000"); // ms: a statement's answer
        // ssl-mode as kdelay's C library means it: REQUIRED encrypts; a CA
        // given (ssl-ca, a PEM file) is checked in every mode; VERIFY_IDENTITY
        // checks the host name (or IP address) too.
        p.setProperty("sslMode", u.sslMode().equals("DISABLED") ? "disable"
                      : u.sslMode().equals("VERIFY_IDENTITY") ? "verify-full"
                      : u.sslCa() != null ? "verify-ca" : "trust");
        if (u.sslCa() != null)
            p.setProperty("serverSslCert", u.sslCa());
        try {
            return DriverManager.getConnection(jdbc, p);
        } catch (SQLException e) {
            // PREFERRED: TLS when the server offers it, else plain. Connector/J
            // has no such mode; asked for TLS, it refuses a server without it
            // with this message (3.5). A failed TLS check stays an error.
            if (!u.sslMode().equals("PREFERRED") || e.getMessage() == null
                || !e.getMessage().contains("ssl not enabled in the server"))
                throw e;
            p.setProperty("sslMode", "disable");
            return DriverManager.getConnection(jdbc, p);
        }
    }

    /** c with the database selected and the schema checked; closed on failure. */
    public static Connection ready(Connection c, String db) throws SQLException, SchemaException {
        try { // autocommit: each statement its own transaction, so the read-back
            // after a 1062 sees the latest row. (Connector/J always talks utf8mb4.)
            c.setAutoCommit(true);
            c.setCatalog(db);
            checkSchema(c);
            return c;
        } catch (SQLException | SchemaException e) {
            closeQuietly(c);
            throw e;
        }
    }

    /** open() then ready(), without the retries of a Session. */
    public static Connection connect(String url, String password) throws SQLException, SchemaException {
        return ready(open(MysqlUrl.parse(url), password), MysqlUrl.parse(url).db());
    }

    /** Throws SchemaException unless this protocol holds for the schema. */
    public static void checkSchema(Connection c) throws SQLException, SchemaException {
        try (Statement st = c.createStatement();
             ResultSet top = st.executeQuery("SELECT COALESCE(MAX(version), 0) FROM kdelay_schema")) {
            top.next();
            SCHEMA.put(c, top.getLong(1));
            if (top.getLong(1) < SCHEMA_MIN)
                throw new SchemaException("database schema is version " + top.getLong(1) + ", this client "
                                          + "needs " + SCHEMA_MIN + ": run `kdelayctl db migrate`");
            if (top.getLong(1) <= SCHEMA_FLOORS_FROM)
                return;
            try (ResultSet rs = st.executeQuery("SELECT version, compat_floor FROM kdelay_schema "
                                                + "WHERE version > " + SCHEMA_FLOORS_FROM)) {
                while (rs.next())
                    if (!floorOk(rs.getString(2)))
                        throw new SchemaException("database schema version " + rs.getLong(1) + " needs "
                            + "kdelay " + Objects.requireNonNullElse(rs.getString(2), "(no floor recorded)")
                            + "; this client follows 0.4.0: upgrade the client");
            }
        } catch (SQLException e) {
            if (e.getErrorCode() == NO_SUCH_TABLE)
                throw new SchemaException("no kdelay schema here: run `kdelayctl db migrate`");
            throw e;
        }
    }

    /** Whether floor ("X.Y.Z") is at or below PROTOCOL_RELEASE, as numbers. */
    static boolean floorOk(String floor) {
        return floor != null && floor.matches("[0-9]{1,9}\\.[0-9]{1,9}\\.[0-9]{1,9}") && Arrays.compare(
            Arrays.stream(floor.split("\\.")).mapToInt(Integer::parseInt).toArray(), PROTOCOL_RELEASE) <= 0;
    }

    /** The id's bytes: 1..128 bytes of UTF-8 without control characters
     *  (U+0000..U+001F, U+007F), as the kdelay-id header carries it. */
    public static byte[] idBytes(String taskId) {
        byte[] b = taskId.getBytes(StandardCharsets.UTF_8);
        if (b.length < 1 || b.length > 128 || taskId.chars().anyMatch(c -> c < 0x20 || c == 0x7F)
            || !new String(b, StandardCharsets.UTF_8).equals(taskId)) // a lone surrogate became '?'
            throw new IllegalArgumentException("task id " + jsonString(taskId)
                                               + " is not 1..128 bytes of UTF-8 without control characters");
        return b;
    }

    /** A task's fate; toJson() as `kdelayctl status --json` prints it, byte for byte. */
    public record Status(String id, String fate, Long fireAtMs, Long decidedAtMs,
                         Long updatedAtMs, String owner, String deadReason) {
        public String toJson() {
            return "{\"id\":" + jsonString(id) + ",\"fate\":" + jsonString(fate) + ",\"fire_at_ms\":"
                + fireAtMs + ",\"decided_at_ms\":" + decidedAtMs + ",\"updated_at_ms\":" + updatedAtMs
                + ",\"owner\":" + (owner == null ? "null" : jsonString(owner))
                + (deadReason == null ? "" : ",\"dead_reason\":" + jsonString(deadReason)) + "}";
        }
    }

    /** The schema version checkSchema found on c; read now for a connection it did not check. */
    static long schemaVersion(Connection c) throws SQLException {
        Long v = SCHEMA.get(c);
        if (v != null)
            return v;
        try (Statement st = c.createStatement();
             ResultSet top = st.executeQuery("SELECT COALESCE(MAX(version), 0) FROM kdelay_schema")) {
            top.next();
            SCHEMA.put(c, top.getLong(1));
            return top.getLong(1);
        }
    }

    /** UNDECIDED when it has no row (pending, unknown, or expired by gc);
     *  FIRED for a FIRING row a run of delivered claims covers (schema 10). */
    public static Status status(Connection c, String taskId) throws SQLException {
        boolean runs = schemaVersion(c) >= SCHEMA_RUNS;
        try (PreparedStatement ps = c.prepareStatement(runs ? STATUS_SQL_RUNS : STATUS_SQL)) {
            // Bound as bytes: compared byte for byte, never re-encoded, never in the SQL text.
            ps.setBytes(1, idBytes(taskId));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next())
                    return new Status(taskId, "UNDECIDED", null, null, null, null, null);
                String owner = rs.getString(3), reason = rs.getString(6), state = rs.getString(1);
                if (runs && "FIRING".equals(state) && rs.getLong(7) == 1)
                    state = "FIRED"; // covered: delivered
                return new Status(taskId, state, rs.getObject(2, Long.class),
                                  rs.getObject(4, Long.class), rs.getObject(5, Long.class),
                                  owner == null || owner.isEmpty() ? null : owner,
                                  reason == null || reason.isEmpty() ? null : reason);
            }
        }
    }

    /** outcome "cancelled", "too_late" or "dead"; fate the state read back, if any. */
    public record Cancel(String outcome, String fate) {}

    /** The cancel's INSERT: rows inserted (1, or 0 while a journal is
     *  pending), -1 when a row exists (duplicate key). */
    static int insertCancelled(Connection c, byte[] id, long now) throws SQLException {
        // Schema 9's statement; when its kdelay_reconcile is missing (error
        // 1146 naming it: a schema before 9), the one before.
        for (String sql : List.of(CANCEL_SQL, CANCEL_SQL_BEFORE_9)) {
            // Never INSERT IGNORE: only "row exists" may pass, other errors stay errors.
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setBytes(1, id);
                ps.setLong(2, now);
                ps.setLong(3, now);
                return ps.executeUpdate();
            } catch (SQLException e) {
                if (e.getErrorCode() == DUP_KEY)
                    return -1;
                if (sql.equals(CANCEL_SQL_BEFORE_9) || e.getErrorCode() != NO_SUCH_TABLE
                    || !String.valueOf(e.getMessage()).contains("kdelay_reconcile"))
                    throw e;
            }
        }
        throw new IllegalStateException("not reached");
    }

    /** One try. Throws Reconciling when a journal is pending and the task's
     *  row (if any) is neither FIRING, FIRED nor DEAD, Unknown when the row
     *  vanished between the insert and the read-back, SQLException on any
     *  other failure (all: unknown). */
    public static Cancel cancel(Connection c, String taskId) throws SQLException, Unknown {
        int inserted = insertCancelled(c, idBytes(taskId), System.currentTimeMillis());
        if (inserted == 1)
            return new Cancel("cancelled", null);
        String fate = status(c, taskId).fate(); // the row decides, if it can
        if (fate.equals("FIRING") || fate.equals("FIRED"))
            return new Cancel("too_late", fate);
        if (fate.equals("DEAD"))
            return new Cancel("dead", fate);
        if (inserted == 0) // nothing inserted, no row or CANCELLED: a journal is pending
            throw new Reconciling(RECONCILING);
        if (fate.equals("CANCELLED")) // a row was there first
            return new Cancel("cancelled", fate);
        throw new Unknown("the row of " + jsonString(taskId) + " changed meanwhile: " + fate);
    }

    public interface Op<T> { T apply(Connection c, String taskId) throws SQLException, Unknown; } // one try

    /** A connection that reconnects for a retry: the protocol's retry policy. */
    public static final class Session implements AutoCloseable {
        private final MysqlUrl url;
        private final String password;
        private Connection conn;

        public Session(String url, String password) {
            this.url = MysqlUrl.parse(url);
            this.password = this.url.password() != null ? this.url.password() : password;
        }

        /** fn, connecting first when need be, tried again on a new connection
         *  after a retryable error and on the same one while a reconciliation is
         *  pending; Unknown on any other error, or when out of attempts
         *  (Reconciling when the last attempt met a pending reconciliation). */
        public <T> T run(Op<T> fn, String taskId) throws Unknown, SchemaException {
            String last = null;
            boolean reconciling = false;
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                if (attempt > 0)
                    sleepMs(RETRY_PAUSE_MS);
                boolean connected = conn != null;
                try {
                    if (conn == null) {
                        Connection c = open(url, password);
                        connected = true;
                        conn = ready(c, url.db());
                    }
                    return fn.apply(conn, taskId);
                } catch (Reconciling e) { // a journal is pending: ask again, same connection
                    last = e.getMessage();
                    reconciling = true;
                } catch (SQLException e) { // the message: one line, never the password
                    reconciling = false;
                    last = ("MySQL error " + e.getErrorCode() + " (" + e.getSQLState() + "): "
                            + e.getMessage()).replaceAll("[\r\n]+", " ");
                    if (password != null && !password.isEmpty())
                        last = last.replace(password, "***");
                    if (!RETRYABLE.contains(e.getErrorCode())
                        && !(connected && String.valueOf(e.getSQLState()).startsWith("08")))
                        throw new Unknown(last);
                    close(); // reconnect (and check the schema) first
                }
            }
            last += " (after " + ATTEMPTS + " attempts)";
            throw reconciling ? new Reconciling(last) : new Unknown(last);
        }

        @Override
        public void close() {
            closeQuietly(conn);
            conn = null;
        }
    }

    private static void closeQuietly(Connection c) {
        try { if (c != null) c.close(); } catch (SQLException ignored) { } // being dropped anyway
    }

    private static void sleepMs(long ms) {
        try { Thread.sleep(Math.max(0, ms)); }
        catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }

    /** A JSON string as cJSON (kdelayctl) writes it: only ", \ and control characters escaped. */
    static String jsonString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            int k = "\"\\\b\f\n\r\t".indexOf(c);
            b.append(k >= 0 ? "\\" + "\"\\bfnrt".charAt(k)
                     : c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        }
        return b.append('"').toString();
    }

    // ---- the command line ----

    static final String USAGE = "usage: Fate [--mysql URL] [--not-before EPOCH_MS] cancel|status ID...";
    private static PrintStream out, err;

    private static int usage(String why) {
        err.println(USAGE + "\nFate: error: " + why);
        return 2;
    }

    static int run(String[] args, Map<String, String> env) {
        String url = env.get("KDELAY_MYSQL_URL"), envPassword = env.get("KDELAY_MYSQL_PASSWORD");
        // The JVM decodes arguments by the locale's charset before main(): outside
        // UTF-8 a non-ASCII id would arrive altered (U+FFFD, or a char per byte).
        boolean utf8 = "UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding", "UTF-8"));
        if (String.join("", args).chars().anyMatch(c -> c == 0xFFFD || (!utf8 && c > 0x7F)))
            return usage("an argument is not UTF-8: run under a UTF-8 locale, e.g. LC_ALL=C.UTF-8");
        List<String> words = new ArrayList<>(); // the verb, then the ids
        Long notBefore = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i], v = i + 1 < args.length ? args[i + 1] : "";
            if (a.equals("-h") || a.equals("--help")) {
                out.println(USAGE);
                return 0;
            } else if (a.equals("--mysql") && i + 1 < args.length) {
                url = args[++i];
            } else if (a.equals("--not-before") && v.matches("-?[0-9]{1,18}")) {
                notBefore = Long.parseLong(args[++i]);
            } else if (a.equals("--")) { // the rest are ids, even those starting with '-'
                words.addAll(Arrays.asList(args).subList(i + 1, args.length));
                break;
            } else if (a.startsWith("-") && !a.equals("-")) {
                return usage(a.equals("--mysql") || a.equals("--not-before")
                             ? "a bad or missing value for " + a : "unknown option " + jsonString(a));
            } else {
                words.add(a);
            }
        }
        String verb = words.isEmpty() ? "" : words.remove(0);
        if (!verb.equals("cancel") && !verb.equals("status") || words.isEmpty())
            return usage("want cancel or status, then one ID or more");
        if (url == null || url.isEmpty())
            return usage("--mysql URL or $KDELAY_MYSQL_URL is required");
        Session session;
        try {
            words.forEach(Fate::idBytes);
            session = new Session(url, envPassword); // the URL's password, else $KDELAY_MYSQL_PASSWORD
            session.run((c, id) -> null, null); // connect and check the schema first
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        } catch (Unknown | SchemaException e) {
            err.println("Fate: error: " + e.getMessage());
            return 1;
        }
        if (notBefore != null)
            sleepMs(notBefore - System.currentTimeMillis());
        boolean unknown = false, tooLate = false, dead = false;
        for (String id : words) {
            String line;
            try {
                if (verb.equals("status")) {
                    line = session.run(Fate::status, id).toJson();
                } else {
                    Cancel r = session.run(Fate::cancel, id);
                    tooLate |= r.outcome().equals("too_late");
                    dead |= r.outcome().equals("dead");
                    line = "{\"id\":" + jsonString(id) + ",\"outcome\":" + jsonString(r.outcome())
                        + ",\"fate\":" + (r.fate() == null ? "null" : jsonString(r.fate())) + "}";
                }
            } catch (Unknown | SchemaException e) {
                unknown = true;
                line = "{\"id\":" + jsonString(id) + (verb.equals("cancel") ? ",\"outcome\":\"unknown\","
                    + "\"fate\":null" : "") + ",\"error\":" + jsonString(e.getMessage()) + "}";
                err.println("Fate: error: " + verb + " " + jsonString(id) + ": " + e.getMessage());
            }
            out.println(line);
        }
        session.close();
        return unknown ? 1 : tooLate ? 3 : dead ? 5 : 0;
    }

    public static void main(String[] args) {
        // Connector/J logs every server error at WARN, the duplicate key a
        // cancel expects too. (In a service: set logger org.mariadb.jdbc to ERROR.)
        System.setProperty("mariadb.logging.disable", System.getProperty("mariadb.logging.disable", "true"));
        // JSON and messages in UTF-8 whatever the locale says; a line at a time.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        System.exit(run(args, System.getenv()));
    }
}
