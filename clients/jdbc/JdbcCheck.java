// JdbcCheck drives the PostgreSQL JDBC driver against a DHSI server. It is
// compiled and run by sqlserver/clients_test.go (TestJDBC): one JVM does every
// check, because JVM start-up is the slow part.
//
// Usage: java -cp postgresql.jar:. JdbcCheck HOST PORT PASSWORD CA_FILE
//
// The server asks user "jdbc" for PASSWORD (SCRAM-SHA-256) and serves TLS
// with a certificate signed by CA_FILE: every connection uses
// sslmode=verify-full.
//
// Each check prints "PASS name" or "FAIL name: detail"; the Go test turns
// every line into a subtest. The exit code is 0 when every check passed.

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;

import org.postgresql.PGResultSetMetaData;
import org.postgresql.PGStatement;

public class JdbcCheck {
    interface Check {
        void run() throws Exception;
    }

    static int failures = 0;

    static void check(String name, Check c) {
        try {
            c.run();
            System.out.println("PASS " + name);
        } catch (Throwable e) {
            failures++;
            String msg = String.valueOf(e);
            if (e instanceof SQLException) {
                msg += " [SQLSTATE " + ((SQLException) e).getSQLState() + "]";
            }
            System.out.println("FAIL " + name + ": " + msg.replace('\n', ' '));
        }
    }

    static void expect(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static String url;
    static String password;
    static String caFile;

    static Connection connect(Properties extra) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "jdbc");
        p.setProperty("password", password);
        p.setProperty("sslmode", "verify-full");
        p.setProperty("sslrootcert", caFile);
        if (extra != null) {
            p.putAll(extra);
        }
        return DriverManager.getConnection(url, p);
    }

    public static void main(String[] args) throws Exception {
        url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/dhsi";
        password = args[2];
        caFile = args[3];
        // prepareThreshold=2: the third execution of a PreparedStatement
        // switches to a named server-side statement with binary results
        Properties props = new Properties();
        props.setProperty("prepareThreshold", "2");
        props.setProperty("ApplicationName", "jdbc-check");
        Connection conn = connect(props);

        check("a wrong password is refused with FATAL 28P01", () -> {
            Properties wrong = new Properties();
            wrong.setProperty("password", "not-the-password");
            try {
                connect(wrong).close();
                expect(false, "connected with a wrong password");
            } catch (SQLException e) {
                expect("28P01".equals(e.getSQLState()), "SQLSTATE " + e.getSQLState());
                expect(e.getMessage().contains("password authentication failed for user \"jdbc\""), "message " + e.getMessage());
            }
        });

        check("connect with SCRAM-SHA-256 over TLS (verify-full) and read the server version", () -> {
            DatabaseMetaData md = conn.getMetaData();
            expect(md.getDatabaseProductName().equals("PostgreSQL"), "product " + md.getDatabaseProductName());
            expect(md.getDatabaseMajorVersion() == 16, "major version " + md.getDatabaseMajorVersion());
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT version()")) {
                rs.next();
                expect(rs.getString(1).startsWith("PostgreSQL 16."), "version() = " + rs.getString(1));
            }
        });

        check("create a table with typed columns", () -> {
            try (Statement st = conn.createStatement()) {
                st.execute("CREATE TABLE jitems (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2), "
                        + "seen TIMESTAMP, day DATE, score DOUBLE, flag BOOLEAN, uid UUID, big BIGINT)");
                st.execute("CREATE VIEW jcheap AS SELECT id, name, price FROM jitems WHERE price < 10");
            }
        });

        check("a PreparedStatement switches to a server-prepared binary statement after prepareThreshold", () -> {
            try (PreparedStatement ps = conn.prepareStatement(
                    "INSERT INTO jitems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 6; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "item " + i);
                    ps.setBigDecimal(3, new BigDecimal(i + ".25"));
                    ps.setTimestamp(4, Timestamp.valueOf("2024-01-0" + i + " 10:11:12.5"));
                    ps.setDate(5, Date.valueOf("2024-02-0" + i));
                    ps.setDouble(6, i * 1.5);
                    ps.setBoolean(7, i % 2 == 0);
                    ps.setObject(8, UUID.fromString("00000000-0000-0000-0000-00000000000" + i));
                    ps.setLong(9, 10000000000L + i);
                    expect(ps.executeUpdate() == 1, "insert count");
                }
                expect(ps.unwrap(PGStatement.class).isUseServerPrepare(), "insert did not switch to a server-prepared statement");
            }
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT id, name, price, seen, day, score, flag, uid, big FROM jitems WHERE id = ? AND name <> ?")) {
                for (int round = 0; round < 5; round++) {
                    for (int i = 1; i <= 6; i++) {
                        ps.setInt(1, i);
                        ps.setString(2, "nobody");
                        try (ResultSet rs = ps.executeQuery()) {
                            expect(rs.next(), "no row for id " + i);
                            expect(rs.getInt(1) == i, "id");
                            expect(rs.getString(2).equals("item " + i), "name " + rs.getString(2));
                            expect(rs.getBigDecimal(3).equals(new BigDecimal(i + ".25")), "price " + rs.getBigDecimal(3));
                            expect(rs.getTimestamp(4).equals(Timestamp.valueOf("2024-01-0" + i + " 10:11:12.5")), "seen " + rs.getTimestamp(4));
                            expect(rs.getDate(5).toString().equals("2024-02-0" + i), "day " + rs.getDate(5));
                            expect(rs.getDouble(6) == i * 1.5, "score " + rs.getDouble(6));
                            expect(rs.getBoolean(7) == (i % 2 == 0), "flag");
                            expect(rs.getObject(8).equals(UUID.fromString("00000000-0000-0000-0000-00000000000" + i)), "uid " + rs.getObject(8));
                            expect(rs.getLong(9) == 10000000000L + i, "big " + rs.getLong(9));
                            expect(!rs.next(), "more than one row");
                        }
                    }
                }
                expect(ps.unwrap(PGStatement.class).isUseServerPrepare(), "select did not switch to a server-prepared statement");
            }
        });

        check("ResultSetMetaData reports types, numeric precision and the source table", () -> {
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT id, name, price FROM jitems")) {
                ResultSetMetaData md = rs.getMetaData();
                expect(md.getColumnType(1) == Types.INTEGER, "id type " + md.getColumnType(1));
                expect(md.getColumnType(3) == Types.NUMERIC, "price type " + md.getColumnType(3));
                expect(md.getPrecision(3) == 10 && md.getScale(3) == 2, "price precision " + md.getPrecision(3) + "," + md.getScale(3));
                expect(md.getTableName(1).equals("jitems"), "table name '" + md.getTableName(1) + "'");
                // pgjdbc's getSchemaName is always ""; the base schema comes from the table OID
                String schema = md.unwrap(PGResultSetMetaData.class).getBaseSchemaName(1);
                expect(schema.equals("public"), "schema name '" + schema + "'");
                expect(md.isNullable(2) == ResultSetMetaData.columnNoNulls, "name nullable " + md.isNullable(2));
            }
        });

        check("setFetchSize streams a large result through a portal in chunks, without truncation", () -> {
            conn.setAutoCommit(false);
            try (Statement st = conn.createStatement()) {
                st.setFetchSize(1000);
                long n = 0, sum = 0;
                try (ResultSet rs = st.executeQuery("SELECT i FROM range(250000) t(i)")) {
                    while (rs.next()) {
                        n++;
                        sum += rs.getLong(1);
                    }
                }
                expect(n == 250000, "rows " + n);
                expect(sum == 250000L * 249999L / 2, "sum " + sum);
            } finally {
                conn.commit();
                conn.setAutoCommit(true);
            }
        });

        check("two fetch-size cursors interleave inside one transaction", () -> {
            conn.setAutoCommit(false);
            try (Statement a = conn.createStatement(); Statement b = conn.createStatement()) {
                a.setFetchSize(10);
                b.setFetchSize(10);
                try (ResultSet ra = a.executeQuery("SELECT i FROM range(100) t(i)");
                     ResultSet rb = b.executeQuery("SELECT i * 2 FROM range(100) t(i)")) {
                    for (int i = 0; i < 100; i++) {
                        expect(ra.next() && rb.next(), "ended early at " + i);
                        expect(ra.getInt(1) == i && rb.getInt(1) == 2 * i, "row " + i);
                    }
                    expect(!ra.next() && !rb.next(), "too many rows");
                }
            } finally {
                conn.commit();
                conn.setAutoCommit(true);
            }
        });

        check("executeBatch runs every statement", () -> {
            try (Statement st = conn.createStatement()) {
                st.execute("CREATE TABLE jbatch (i INTEGER)");
            }
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO jbatch VALUES (?)")) {
                for (int i = 0; i < 50; i++) {
                    ps.setInt(1, i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                expect(counts.length == 50, "batch counts " + counts.length);
            }
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*), sum(i) FROM jbatch")) {
                rs.next();
                expect(rs.getInt(1) == 50 && rs.getInt(2) == 1225, "count " + rs.getInt(1) + " sum " + rs.getInt(2));
            }
        });

        check("DatabaseMetaData.getTables lists tables and views of public only", () -> {
            List<String> got = new ArrayList<>();
            try (ResultSet rs = conn.getMetaData().getTables(null, "public", "j%", new String[] {"TABLE", "VIEW"})) {
                while (rs.next()) {
                    got.add(rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
                }
            }
            expect(got.contains("public.jitems:TABLE"), "tables " + got);
            expect(got.contains("public.jcheap:VIEW"), "views " + got);
            List<String> all = new ArrayList<>();
            try (ResultSet rs = conn.getMetaData().getTables(null, null, "%", null)) {
                while (rs.next()) {
                    all.add(rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME"));
                }
            }
            for (String t : all) {
                expect(!t.startsWith("dhsi_"), "internal relation listed: " + t);
            }
        });

        check("DatabaseMetaData.getColumns describes a view's columns with types and sizes", () -> {
            List<String> got = new ArrayList<>();
            try (ResultSet rs = conn.getMetaData().getColumns(null, "public", "jcheap", "%")) {
                while (rs.next()) {
                    got.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME") + ":" + rs.getInt("DATA_TYPE")
                            + ":" + rs.getInt("COLUMN_SIZE") + ":" + rs.getInt("DECIMAL_DIGITS") + ":" + rs.getInt("ORDINAL_POSITION"));
                }
            }
            expect(got.size() == 3, "columns " + got);
            expect(got.get(0).equals("id:int4:4:10:0:1"), "id " + got.get(0));
            expect(got.get(1).startsWith("name:varchar:12:") || got.get(1).startsWith("name:text:12:"), "name " + got.get(1));
            expect(got.get(2).equals("price:numeric:2:10:2:3"), "price " + got.get(2));
        });

        check("DatabaseMetaData.getPrimaryKeys, getSchemas and getCatalogs", () -> {
            DatabaseMetaData md = conn.getMetaData();
            List<String> pk = new ArrayList<>();
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "jitems")) {
                while (rs.next()) {
                    pk.add(rs.getString("COLUMN_NAME"));
                }
            }
            expect(pk.equals(List.of("id")), "primary key " + pk);
            List<String> schemas = new ArrayList<>();
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) {
                    schemas.add(rs.getString("TABLE_SCHEM"));
                }
            }
            expect(schemas.contains("public"), "schemas " + schemas);
            for (String s : schemas) {
                expect(!s.startsWith("dhsi_"), "internal schema listed: " + s);
            }
            List<String> cats = new ArrayList<>();
            try (ResultSet rs = md.getCatalogs()) {
                while (rs.next()) {
                    cats.add(rs.getString(1));
                }
            }
            expect(cats.equals(List.of("dhsi")), "catalogs " + cats);
        });

        check("errors carry their SQLSTATE and the connection goes on", () -> {
            try (Statement st = conn.createStatement()) {
                try {
                    st.executeQuery("SELECT * FROM no_such_table");
                    expect(false, "no error");
                } catch (SQLException e) {
                    expect("42P01".equals(e.getSQLState()), "SQLSTATE " + e.getSQLState());
                }
                try (ResultSet rs = st.executeQuery("SELECT 1")) {
                    expect(rs.next() && rs.getInt(1) == 1, "after the error");
                }
            }
        });

        check("transaction isolation and read-only settings are accepted", () -> {
            conn.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
            expect(conn.getTransactionIsolation() == Connection.TRANSACTION_SERIALIZABLE, "isolation " + conn.getTransactionIsolation());
            conn.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            conn.setAutoCommit(false);
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM jitems")) {
                rs.next();
                expect(rs.getInt(1) == 6, "count " + rs.getInt(1));
            }
            conn.rollback();
            conn.setAutoCommit(true);
        });

        conn.close();
        System.out.println(failures == 0 ? "DONE" : "DONE with " + failures + " failures");
        System.exit(failures == 0 ? 0 : 1);
    }
}
