/*
 * Cancels a kdelay task, or asks its fate, from Java.
 *
 * Implements the client side of the fate protocol, docs/fate-protocol.md
 * "Clients: cancel and status from any language": a cancel is one plain
 * INSERT of a CANCELLED row; a duplicate key (1062) means a row was there
 * first, and reading it back tells too late (FIRING/FIRED) or dead (DEAD)
 * from cancelled already. Whichever insert lands first -- the cancel or a
 * forwarder's claim -- decides, so "cancelled" is final: the task is never
 * delivered. Needs MariaDB Connector/J (org.mariadb.jdbc:mariadb-java-client,
 * in pom.xml); plain JDBC otherwise, no framework.
 *
 * Build (examples/java/), then run:
 *
 *   mvn -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 *   export KDELAY_MYSQL_PASSWORD=...     # unless the URL carries one
 *   java -cp "target/classes:$(cat target/classpath.txt)" Fate \
 *       --mysql mysql://app@db:3306/kdelay cancel order-42-reminder
 *   java -cp "target/classes:$(cat target/classpath.txt)" Fate status order-42-reminder
 *
 *   Fate [--mysql URL] [--not-before EPOCH_MS] cancel|status ID...
 *
 * --mysql defaults to $KDELAY_MYSQL_URL:
 * mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE] (user and
 * password percent-decoded, port 3306, db "kdelay"); the password is the
 * URL's, else $KDELAY_MYSQL_PASSWORD, never an option. It connects and
 * checks the schema first; --not-before then waits until that instant
 * before the first id. It prints one JSON line per id, in order:
 * {"id","outcome","fate"[,"error"]} for cancel (outcome cancelled, too_late,
 * dead or unknown; fate the state read back, null when the insert itself
 * succeeded), `kdelayctl status --json`'s object for status (byte for
 * byte; {"id","error"} when it failed). Exit 0: every id cancelled /
 * answered; 1: an outcome is unknown, or no connection (retry: a cancel is
 * idempotent); otherwise 3: a task was too late; 5: a task was
 * dead-lettered; 2: bad arguments. Errors go to stderr, one line each,
 * never with the password. The JVM decodes arguments by the locale's
 * charset: run it under a UTF-8 locale (C.UTF-8 will do), else a non-ASCII
 * id is refused rather than altered.
 *
 * As a library: Connection c = Fate.connect(url, password) (autocommit,
 * schema checked); Fate.cancel(c, id).outcome() -> "cancelled" |
 * "too_late" | "dead" (throws Fate.Unknown or SQLException: unknown);
 * Fate.status(c, id) -> Fate.Status (toJson()). Fate.Session adds the
 * retry policy: reconnect and try again on the errors the protocol lists.
 */
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

public final class Fate {
    /** The kdelay release whose protocol this file follows: a schema
     *  version above 6 is usable only while its compat_floor is at or below
     *  it (compared as numbers, X.Y.Z). */
    static final int[] PROTOCOL_RELEASE = {0, 2, 0};
    static final int SCHEMA_MIN = 5; // the DEAD state and dead_reason
    static final int SCHEMA_FLOORS_FROM = 6; // versions above it carry a floor

    /** Errors after which the same statement may be sent again on a new
     *  connection: connection lost (client 2006, 2013; server shutdown
     *  1053), a read-only server during a failover (1290, 1836), lock wait
     *  and deadlock (1205, 1213). Connector/J reports a lost connection as
     *  SQLState class 08 (SQLNonTransientConnectionException) rather than
     *  2006/2013: see retryable(). */
    static final Set<Integer> RETRYABLE = Set.of(2006, 2013, 1053, 1290, 1836, 1205, 1213);
    static final int ATTEMPTS = 3;
    static final long RETRY_PAUSE_MS = 250;

    static final int DUP_KEY = 1062;
    static final int NO_SUCH_TABLE = 1146;

    static final String PROG = "Fate";

    /** The outcome is unknown: the cancel may or may not have landed. */
    public static final class Unknown extends Exception {
        private static final long serialVersionUID = 1L;

        public Unknown(String message) {
            super(message);
        }
    }

    /** The database's schema is not one this client can use. */
    public static final class SchemaException extends Exception {
        private static final long serialVersionUID = 1L;

        public SchemaException(String message) {
            super(message);
        }
    }

    /** --mysql URL, parsed. password: null when the URL has none. */
    public record MysqlUrl(String user, String password, String host, int port, String db,
                           String sslMode, String sslCa) {
        /** mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE].
         *  Throws IllegalArgumentException whose message never holds the
         *  password (nor the URL). */
        public static MysqlUrl parse(String url) {
            String scheme = "mysql://";
            if (url == null || !url.startsWith(scheme))
                throw new IllegalArgumentException("the URL must start with mysql://");
            String rest = url.substring(scheme.length());
            // The user info ends at the last '@', so a password may hold '@',
            // '?' or '/' unencoded; the query starts at the first '?' after it.
            int at = rest.lastIndexOf('@');
            if (at <= 0)
                throw new IllegalArgumentException(
                    "the URL needs user@host (mysql://user[:password]@host[:port]/db)");
            String userinfo = rest.substring(0, at), hostpart = rest.substring(at + 1), query = null;
            int q = hostpart.indexOf('?');
            if (q >= 0) {
                query = hostpart.substring(q + 1);
                hostpart = hostpart.substring(0, q);
            }
            int colon = userinfo.indexOf(':');
            String user = pctDecode(colon >= 0 ? userinfo.substring(0, colon) : userinfo, "user");
            String password = colon >= 0 ? pctDecode(userinfo.substring(colon + 1), "password") : null;
            if (user.isEmpty())
                throw new IllegalArgumentException("the URL's user name is empty");

            int slash = hostpart.indexOf('/');
            String hostport = slash >= 0 ? hostpart.substring(0, slash) : hostpart;
            String db = slash >= 0 ? pctDecode(hostpart.substring(slash + 1), "database") : "";
            if (db.isEmpty())
                db = "kdelay";
            if (db.indexOf('/') >= 0)
                throw new IllegalArgumentException("the database name holds a '/'");
            String host, portText = null;
            if (hostport.startsWith("[")) { // [IPv6]:port
                int close = hostport.indexOf(']');
                if (close < 0 || (close + 1 < hostport.length() && hostport.charAt(close + 1) != ':'))
                    throw new IllegalArgumentException("an IPv6 host must be in brackets ([::1]:3306)");
                host = hostport.substring(0, close + 1);
                if (close + 1 < hostport.length())
                    portText = hostport.substring(close + 2);
            } else {
                int c = hostport.indexOf(':');
                if (c >= 0 && hostport.indexOf(':', c + 1) >= 0)
                    throw new IllegalArgumentException("an IPv6 host must be in brackets ([::1]:3306)");
                host = c >= 0 ? hostport.substring(0, c) : hostport;
                if (c >= 0)
                    portText = hostport.substring(c + 1);
            }
            if (host.isEmpty() || host.equals("[]"))
                throw new IllegalArgumentException("the URL's host is empty");
            int port = 3306;
            if (portText != null) {
                if (!portText.matches("[0-9]{1,5}") || Integer.parseInt(portText) < 1
                    || Integer.parseInt(portText) > 65535)
                    throw new IllegalArgumentException("the port must be 1..65535");
                port = Integer.parseInt(portText);
            }

            String mode = "PREFERRED", ca = null;
            if (query != null) {
                for (String kv : query.split("&", -1)) {
                    int eq = kv.indexOf('=');
                    String name = eq >= 0 ? kv.substring(0, eq) : kv;
                    String value = eq >= 0 ? pctDecode(kv.substring(eq + 1), "URL parameter") : "";
                    switch (name) {
                    case "ssl-mode" -> {
                        mode = value.toUpperCase(Locale.ROOT);
                        if (!List.of("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA",
                                     "VERIFY_IDENTITY").contains(mode))
                            throw new IllegalArgumentException(
                                "ssl-mode " + quote(value) + " is not one of DISABLED, PREFERRED, "
                                + "REQUIRED, VERIFY_CA, VERIFY_IDENTITY");
                    }
                    case "ssl-ca" -> {
                        if (value.isEmpty())
                            throw new IllegalArgumentException("the ssl-ca parameter is empty");
                        ca = value;
                    }
                    default -> throw new IllegalArgumentException(
                        "unknown URL parameter " + quote(name) + " (known: ssl-mode, ssl-ca)");
                    }
                }
            }
            if ((mode.equals("VERIFY_CA") || mode.equals("VERIFY_IDENTITY")) && ca == null)
                throw new IllegalArgumentException(
                    "ssl-mode " + mode + " needs a CA: add ssl-ca=FILE to the URL");
            return new MysqlUrl(user, password, host, port, db, mode, ca);
        }

        /** Connector/J's options for this URL (pass: the password to use;
         *  tls: false for a plain connection). */
        Properties driverProperties(String pass, boolean tls) {
            Properties p = new Properties();
            p.setProperty("user", user);
            if (pass != null)
                p.setProperty("password", pass);
            // Each statement its own transaction (Connector/J's default too;
            // said here because the read-back after a 1062 must see the
            // latest row, not an earlier snapshot). Connector/J always talks
            // utf8mb4 (its connectionCollation can only name a utf8mb4_*
            // collation), which the protocol requires.
            p.setProperty("autocommit", "true");
            p.setProperty("connectTimeout", "10000"); // ms
            p.setProperty("socketTimeout", "30000"); // ms: a statement's answer
            // ssl-mode as kdelay's C library means it: REQUIRED encrypts;
            // a CA given (ssl-ca, a PEM file) is checked against the
            // server's chain in every mode; VERIFY_IDENTITY checks the host
            // as given, name or IP address, too. PREFERRED: see open().
            String mode = !tls ? "disable"
                : sslMode.equals("VERIFY_IDENTITY") ? "verify-full"
                : sslCa != null ? "verify-ca"
                : "trust";
            p.setProperty("sslMode", mode);
            if (tls && sslCa != null)
                p.setProperty("serverSslCert", sslCa);
            return p;
        }

        @Override
        public String toString() { // never the password
            return "mysql://" + user + (password != null ? ":***" : "") + "@" + host + ":" + port
                + "/" + db;
        }
    }

    private static String pctDecode(String s, String what) {
        try {
            // URLDecoder would turn '+' into a space: keep it a '+'.
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad percent-encoding in the URL's " + what);
        }
    }

    /** Opens a connection (no schema check): autocommit, utf8mb4, the
     *  database selected. password, when not null, overrides the URL's. */
    static Connection open(MysqlUrl u, String password) throws SQLException {
        String pass = password != null ? password : u.password();
        // The database is selected after connecting (COM_INIT_DB), so its
        // name needs no quoting inside the JDBC URL.
        String jdbc = "jdbc:mariadb://" + u.host() + ":" + u.port() + "/";
        Connection c;
        try {
            c = DriverManager.getConnection(jdbc, u.driverProperties(pass, !u.sslMode().equals("DISABLED")));
        } catch (SQLException e) {
            // PREFERRED is TLS when the server offers it, else plain.
            // Connector/J has no such mode: asked for TLS, it refuses a
            // server without it with this message (3.5), and then we
            // connect in plain. A TLS failure (a CA given that does not
            // match) is not a reason to fall back: it stays an error.
            String m = e.getMessage();
            if (!u.sslMode().equals("PREFERRED") || m == null
                || !m.contains("ssl not enabled in the server"))
                throw e;
            c = DriverManager.getConnection(jdbc, u.driverProperties(pass, false));
        }
        try {
            c.setAutoCommit(true);
            c.setCatalog(u.db());
        } catch (SQLException e) {
            closeQuietly(c);
            throw e;
        }
        return c;
    }

    /** Throws SchemaException unless this protocol holds for the schema. */
    public static void checkSchema(Connection c) throws SQLException, SchemaException {
        List<Long> versions = new ArrayList<>();
        List<String> floors = new ArrayList<>();
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT version, compat_floor FROM kdelay_schema")) {
            while (rs.next()) {
                versions.add(rs.getLong(1));
                floors.add(rs.getString(2));
            }
        } catch (SQLException e) {
            if (e.getErrorCode() == NO_SUCH_TABLE)
                throw new SchemaException("no kdelay schema here: run `kdelayctl db migrate`");
            throw e;
        }
        long top = 0;
        for (long v : versions)
            top = Math.max(top, v);
        if (top < SCHEMA_MIN)
            throw new SchemaException("database schema is version " + top + ", this client needs "
                                      + SCHEMA_MIN + ": run `kdelayctl db migrate`");
        for (int i = 0; i < versions.size(); i++) {
            long version = versions.get(i);
            String floor = floors.get(i);
            if (version <= SCHEMA_FLOORS_FROM)
                continue;
            int[] f = release(floor);
            if (f == null || compareRelease(f, PROTOCOL_RELEASE) > 0)
                throw new SchemaException(
                    "database schema version " + version + " needs kdelay "
                    + (floor != null ? floor : "(no floor recorded)") + "; this client follows "
                    + PROTOCOL_RELEASE[0] + "." + PROTOCOL_RELEASE[1] + "." + PROTOCOL_RELEASE[2]
                    + ": upgrade the client");
        }
    }

    /** "X.Y.Z" -> {X, Y, Z}, or null when it is not that. */
    static int[] release(String text) {
        if (text == null || !text.matches("[0-9]{1,9}\\.[0-9]{1,9}\\.[0-9]{1,9}"))
            return null;
        String[] p = text.split("\\.");
        return new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2])};
    }

    static int compareRelease(int[] a, int[] b) {
        for (int i = 0; i < 3; i++)
            if (a[i] != b[i])
                return Integer.compare(a[i], b[i]);
        return 0;
    }

    /** A connection in autocommit (each statement its own transaction),
     *  utf8mb4, the schema checked. password, when not null, overrides the
     *  URL's. Throws IllegalArgumentException for a bad URL. */
    public static Connection connect(String url, String password)
        throws SQLException, SchemaException {
        Connection c = open(MysqlUrl.parse(url), password);
        try {
            checkSchema(c);
        } catch (SQLException | SchemaException | RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
        return c;
    }

    /** The id's bytes: 1..128 bytes of UTF-8 without control characters
     *  (U+0000..U+001F, U+007F), as the kdelay-id header carries it. */
    public static byte[] idBytes(String taskId) {
        byte[] b;
        try { // a lone surrogate is not UTF-8: refuse it rather than send '?'
            ByteBuffer bb = StandardCharsets.UTF_8.newEncoder()
                                .onMalformedInput(CodingErrorAction.REPORT)
                                .onUnmappableCharacter(CodingErrorAction.REPORT)
                                .encode(CharBuffer.wrap(taskId));
            b = new byte[bb.remaining()];
            bb.get(b);
        } catch (CharacterCodingException e) {
            b = new byte[0];
        }
        boolean bad = b.length < 1 || b.length > 128;
        for (byte x : b)
            bad |= (x >= 0 && x < 0x20) || x == 0x7F;
        if (bad)
            throw new IllegalArgumentException(
                "task id " + quote(taskId) + " is not 1..128 bytes of UTF-8 without control characters");
        return b;
    }

    /** A task's fate, as `kdelayctl status --json` prints it. Times and
     *  owner null when NULL or no row; deadReason null unless set. */
    public record Status(String id, String fate, Long fireAtMs, Long decidedAtMs,
                         Long updatedAtMs, String owner, String deadReason) {
        /** kdelayctl's JSON: same keys, same order, compact. */
        public String toJson() {
            StringBuilder s = new StringBuilder("{");
            s.append("\"id\":").append(jsonString(id));
            s.append(",\"fate\":").append(jsonString(fate));
            s.append(",\"fire_at_ms\":").append(fireAtMs);
            s.append(",\"decided_at_ms\":").append(decidedAtMs);
            s.append(",\"updated_at_ms\":").append(updatedAtMs);
            s.append(",\"owner\":").append(owner == null ? "null" : jsonString(owner));
            if (deadReason != null)
                s.append(",\"dead_reason\":").append(jsonString(deadReason));
            return s.append('}').toString();
        }
    }

    /** The task's fate: UNDECIDED when it has no row (pending, unknown, or
     *  its row expired by gc). Read-only and safe to retry. */
    public static Status status(Connection c, String taskId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                 "SELECT state, fire_at_ms, owner, decided_at_ms, updated_at_ms, dead_reason "
                 + "FROM kdelay_fate WHERE task_id = ?")) {
            // The id is bound as bytes: compared byte for byte with the
            // VARBINARY column, never re-encoded, never part of the SQL text.
            ps.setBytes(1, idBytes(taskId));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next())
                    return new Status(taskId, "UNDECIDED", null, null, null, null, null);
                String owner = rs.getString(3), reason = rs.getString(6);
                return new Status(taskId, rs.getString(1), longOrNull(rs, 2),
                                  longOrNull(rs, 4), longOrNull(rs, 5),
                                  owner == null || owner.isEmpty() ? null : owner,
                                  reason == null || reason.isEmpty() ? null : reason);
            }
        }
    }

    private static Long longOrNull(ResultSet rs, int column) throws SQLException {
        long v = rs.getLong(column);
        return rs.wasNull() ? null : v;
    }

    /** A cancel's answer: outcome "cancelled", "too_late" or "dead"; fate
     *  the state read back after a duplicate key, null when the insert
     *  itself succeeded. */
    public record Cancel(String outcome, String fate) {}

    /** One try. Throws Unknown when the row vanished between the insert and
     *  the read-back, SQLException on any other failure (both: unknown). */
    public static Cancel cancel(Connection c, String taskId) throws SQLException, Unknown {
        long now = System.currentTimeMillis();
        // A plain INSERT, never INSERT IGNORE: only "row exists" may pass,
        // every other problem stays an error.
        try (PreparedStatement ps = c.prepareStatement(
                 "INSERT INTO kdelay_fate (task_id, state, decided_at_ms, updated_at_ms) "
                 + "VALUES (?, 'CANCELLED', ?, ?)")) {
            ps.setBytes(1, idBytes(taskId));
            ps.setLong(2, now);
            ps.setLong(3, now);
            ps.executeUpdate();
            return new Cancel("cancelled", null); // this insert decided
        } catch (SQLException e) {
            if (e.getErrorCode() != DUP_KEY)
                throw e;
        }
        // A row was there first: it decides.
        String fate = status(c, taskId).fate();
        return switch (fate) {
            case "CANCELLED" -> new Cancel("cancelled", fate);
            case "FIRING", "FIRED" -> new Cancel("too_late", fate);
            case "DEAD" -> new Cancel("dead", fate);
            default -> throw new Unknown("the row of " + quote(taskId)
                                        + " changed during the cancel (now " + fate + ")");
        };
    }

    /** One attempt's work on a checked connection. */
    public interface Op<T> {
        T apply(Connection c, String taskId) throws SQLException, Unknown;
    }

    /** A connection that reconnects for a retry: the protocol's retry
     *  policy, for the command line and any caller that wants it. */
    public static final class Session implements AutoCloseable {
        private final MysqlUrl url;
        private final String password;
        private Connection conn;

        /** password: null to use the URL's. */
        public Session(String url, String password) {
            this.url = MysqlUrl.parse(url);
            this.password = password;
        }

        /** fn on the connection (opened and checked first when there is
         *  none), up to ATTEMPTS times on a retryable error, RETRY_PAUSE_MS
         *  apart, each retry on a new connection. Throws Unknown on any
         *  other error, or when the attempts run out; SchemaException when
         *  the schema is not one this client can use. */
        public <T> T run(Op<T> fn, String taskId) throws Unknown, SchemaException {
            String last = null;
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                if (attempt > 0)
                    sleepMs(RETRY_PAUSE_MS);
                boolean connected = conn != null;
                try {
                    if (conn == null) { // kept only once its schema is checked
                        Connection c = open(url, password);
                        connected = true;
                        try {
                            checkSchema(c);
                        } catch (SQLException | SchemaException e) {
                            closeQuietly(c);
                            throw e;
                        }
                        conn = c;
                    }
                    return fn.apply(conn, taskId);
                } catch (SQLException e) {
                    last = message(e);
                    if (!retryable(e, connected))
                        throw new Unknown(last);
                    close(); // reconnect (and check the schema) first
                }
            }
            throw new Unknown(last + " (after " + ATTEMPTS + " attempts)");
        }

        @Override
        public void close() {
            closeQuietly(conn);
            conn = null;
        }
    }

    /** Whether a statement may be sent again on a new connection: one of
     *  the listed error numbers, or -- on a connection that was open -- a
     *  lost connection, which Connector/J reports as SQLState 08xxx (a
     *  socket error, a read timeout, "Connection is closed") where the C
     *  client says 2006/2013. A failure to connect at all (refused, bad
     *  TLS setup: also 08xxx) is not retried. */
    static boolean retryable(SQLException e, boolean connected) {
        if (RETRYABLE.contains(e.getErrorCode()))
            return true;
        String state = e.getSQLState();
        return connected && state != null && state.startsWith("08");
    }

    static String message(SQLException e) {
        String m = e.getMessage() != null ? e.getMessage() : e.toString();
        return "MySQL error " + e.getErrorCode() + " (" + e.getSQLState() + "): " + m;
    }

    private static void closeQuietly(Connection c) {
        if (c == null)
            return;
        try {
            c.close();
        } catch (SQLException ignored) {
            // the connection is being dropped anyway
        }
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(Math.max(0, ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A JSON string as cJSON (kdelayctl) writes it: ", \ and control
     *  characters escaped, everything else as is (UTF-8 on output). */
    static String jsonString(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
            case '"' -> b.append("\\\"");
            case '\\' -> b.append("\\\\");
            case '\b' -> b.append("\\b");
            case '\f' -> b.append("\\f");
            case '\n' -> b.append("\\n");
            case '\r' -> b.append("\\r");
            case '\t' -> b.append("\\t");
            default -> {
                if (c < 0x20)
                    b.append(String.format("\\u%04x", (int) c));
                else
                    b.append(c);
            }
            }
        }
        return b.append('"').toString();
    }

    /** A value from the input, quoted for a message: 'text', with \, ' and
     *  control characters escaped. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder("'");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' || c == '\'')
                b.append('\\').append(c);
            else if (c < 0x20 || c == 0x7F)
                b.append(String.format("\\x%02x", (int) c));
            else
                b.append(c);
        }
        return b.append('\'').toString();
    }

    // ---- the command line ----

    static final String USAGE =
        "Usage: Fate [--mysql URL] [--not-before EPOCH_MS] cancel|status ID...\n"
        + "  --mysql URL             mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE]\n"
        + "                          (default $KDELAY_MYSQL_URL; password from the URL, else\n"
        + "                          $KDELAY_MYSQL_PASSWORD)\n"
        + "  --not-before EPOCH_MS   connect first, then wait until this instant\n"
        + "Exit: 0 all cancelled/answered, 1 unknown or no connection, 3 too late,\n"
        + "5 dead-lettered, 2 usage.";

    private static PrintStream out, err;

    private static int usage(String why) {
        err.println(PROG + ": error: " + why);
        err.println(USAGE.lines().findFirst().orElse("") + " (--help: more)");
        return 2;
    }

    /** A message for stderr: one line, never the password. */
    private static String clean(String msg, String password) {
        String m = msg.replace('\n', ' ').replace('\r', ' ');
        return password == null || password.isEmpty() ? m : m.replace(password, "***");
    }

    /** The JVM decodes arguments and the environment by the locale's
     *  charset (sun.jnu.encoding), before main() sees them: under LANG=C a
     *  non-ASCII byte becomes U+FFFD, under a Latin-1 locale each byte a
     *  character, so the id's bytes would be lost. Refuses what may have
     *  been altered so; null when it is fine. */
    static String undecodable(String what, String value) {
        if (value == null)
            return null;
        boolean utf8 = "UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding", "UTF-8"));
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!utf8 && c > 0x7F)
                return what + " is not ASCII and the locale's charset is "
                    + System.getProperty("sun.jnu.encoding") + ", not UTF-8: run under a UTF-8 "
                    + "locale, e.g. LC_ALL=C.UTF-8";
            if (c == '\uFFFD') // also a real U+FFFD: indistinguishable, refused
                return what + " is not valid UTF-8";
        }
        return null;
    }

    static int run(String[] args, Map<String, String> env) {
        for (String a : args)
            if (undecodable("an argument", a) != null)
                return usage(undecodable("an argument", a));
        for (String name : List.of("KDELAY_MYSQL_URL", "KDELAY_MYSQL_PASSWORD"))
            if (undecodable("$" + name, env.get(name)) != null)
                return usage(undecodable("$" + name, env.get(name)));
        String url = env.get("KDELAY_MYSQL_URL"), verb = null;
        Long notBefore = null;
        List<String> ids = new ArrayList<>();
        boolean optionsDone = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!optionsDone && a.startsWith("-")) {
                String name = a, value = null;
                int eq = a.indexOf('=');
                if (a.startsWith("--") && eq > 0) {
                    name = a.substring(0, eq);
                    value = a.substring(eq + 1);
                }
                switch (name) {
                case "--" -> optionsDone = true;
                case "-h", "--help" -> {
                    out.println(USAGE);
                    return 0;
                }
                case "--mysql", "--not-before" -> {
                    if (value == null) {
                        if (i + 1 >= args.length)
                            return usage(name + " needs a value");
                        value = args[++i];
                    }
                    if (name.equals("--mysql")) {
                        url = value;
                    } else {
                        if (!value.matches("-?[0-9]{1,18}"))
                            return usage("--not-before " + quote(value) + " is not epoch milliseconds");
                        notBefore = Long.parseLong(value);
                    }
                }
                default -> {
                    return usage("unknown option " + quote(name));
                }
                }
            } else if (verb == null) {
                verb = a;
            } else {
                ids.add(a);
            }
        }
        if (verb == null || (!verb.equals("cancel") && !verb.equals("status")))
            return usage(verb == null ? "want cancel or status" : "unknown command " + quote(verb));
        if (ids.isEmpty())
            return usage(verb + ": no ID given");
        if (url == null || url.isEmpty())
            return usage("--mysql URL or $KDELAY_MYSQL_URL is required");
        MysqlUrl parsed;
        try {
            parsed = MysqlUrl.parse(url);
            for (String id : ids)
                idBytes(id);
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        }

        // The URL's password, else $KDELAY_MYSQL_PASSWORD, else none.
        String password = parsed.password() != null ? null : env.get("KDELAY_MYSQL_PASSWORD");
        String secret = parsed.password() != null ? parsed.password() : password;
        Session session = new Session(url, password);
        try {
            session.run((c, id) -> null, null); // connect and check first
        } catch (Unknown | SchemaException e) {
            err.println(PROG + ": error: " + clean(e.getMessage(), secret));
            return 1;
        }
        if (notBefore != null)
            sleepMs(notBefore - System.currentTimeMillis());

        boolean unknown = false, tooLate = false, dead = false;
        for (String id : ids) {
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
                String msg = clean(e.getMessage(), secret);
                line = "{\"id\":" + jsonString(id)
                    + (verb.equals("cancel") ? ",\"outcome\":\"unknown\",\"fate\":null" : "")
                    + ",\"error\":" + jsonString(msg) + "}";
                err.println(PROG + ": error: " + verb + " " + quote(id) + ": " + msg);
                err.flush();
            }
            out.println(line);
            out.flush();
        }
        session.close();
        return unknown ? 1 : tooLate ? 3 : dead ? 5 : 0;
    }

    public static void main(String[] args) {
        // Connector/J logs every server error at WARN, the duplicate key a
        // cancel expects too; this program reports what matters itself. (In
        // a service: set the logger org.mariadb.jdbc to ERROR instead.)
        if (System.getProperty("mariadb.logging.disable") == null)
            System.setProperty("mariadb.logging.disable", "true");
        // JSON and messages in UTF-8 whatever the locale says.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        int rc = run(args, System.getenv());
        out.flush();
        err.flush();
        System.exit(rc);
    }
}
