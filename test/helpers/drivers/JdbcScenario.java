// pgjdbc scenario through pgwarden: prints what it observed as one JSON object (test/e2e/drivers/pgjdbc.test.ts).
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class JdbcScenario {
  interface Section {
    Object run(Connection c) throws Exception;
  }

  static final Map<String, Object> out = new LinkedHashMap<>();

  public static void main(String[] args) throws Exception {
    String dba = args[0], alice = args[1], table = args[2];
    out.put("driver", org.postgresql.Driver.class.getPackage().getImplementationVersion());
    section("introspection", dba, c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      DatabaseMetaData md = c.getMetaData();
      o.put("product", md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
      o.put("driverVersion", md.getDriverVersion());
      List<Object> tables = new ArrayList<>();
      try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
        while (rs.next()) tables.add(rs.getString("TABLE_NAME"));
      }
      o.put("tables", tables);
      List<Object> cols = new ArrayList<>();
      try (ResultSet rs = md.getColumns(null, "public", "users", "%")) {
        while (rs.next()) cols.add(List.of(rs.getString("COLUMN_NAME"), rs.getString("TYPE_NAME"), rs.getInt("ORDINAL_POSITION")));
      }
      o.put("columns", cols);
      List<Object> pks = new ArrayList<>();
      try (ResultSet rs = md.getPrimaryKeys(null, "public", "users")) {
        while (rs.next()) pks.add(List.of(rs.getString("COLUMN_NAME"), rs.getString("PK_NAME")));
      }
      o.put("primaryKeys", pks);
      return o;
    });
    section("queries", dba, c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select count(*) from users")) {
        rs.next();
        o.put("simple", rs.getLong(1));
      }
      List<Object> rows = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(
          "select id, name, org_id, amount_total from users u, lateral (select sum(amount) as amount_total from orders o where o.user_id = u.id) t where id = ?")) {
        for (int i = 1; i <= 6; i++) {
          ps.setInt(1, i);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            rows.add(List.of(rs.getInt(1), rs.getString(2), rs.getInt(3), String.valueOf(rs.getBigDecimal(4))));
          }
        }
      }
      o.put("prepared", rows);
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("select count(*) from pg_prepared_statements where name like 'S\\_%'")) {
        rs.next();
        o.put("namedStatements", rs.getLong(1));
      }
      return o;
    });
    section("transaction", dba, c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      try (Statement s = c.createStatement()) {
        s.execute("drop table if exists " + table);
        s.execute("create table " + table + " (id int primary key, v text)");
      }
      try {
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement("insert into " + table + " values (?, ?)")) {
          ps.setInt(1, 1);
          ps.setString(2, "a");
          ps.executeUpdate();
          ps.setString(2, "dup");
          try {
            ps.executeUpdate();
          } catch (SQLException e) {
            o.put("txError", err(e));
          }
        }
        c.rollback();
        try (Statement s = c.createStatement()) {
          s.executeUpdate("insert into " + table + " values (2, 'b')");
          Savepoint sp = c.setSavepoint();
          try {
            s.executeQuery("select 1/0");
          } catch (SQLException e) {
            o.put("savepointError", err(e));
          }
          c.rollback(sp);
          s.executeUpdate("insert into " + table + " values (3, 'c')");
        }
        c.commit();
        c.setAutoCommit(true);
        List<Object> rows = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select id, v from " + table + " order by id")) {
          while (rs.next()) rows.add(List.of(rs.getInt(1), rs.getString(2)));
        }
        o.put("afterRecovery", rows);
      } finally {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("drop table if exists " + table);
        }
      }
      return o;
    });
    section("aliceMasks", alice, c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      List<Object> rows = new ArrayList<>();
      List<Object> types = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement("select id, email, org_id from users where id = ?")) {
        for (int i = 1; i <= 6; i++) {
          ps.setInt(1, i);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            rows.add(List.of(rs.getInt(1), rs.getString(2), rs.getString(3), String.valueOf(rs.getObject(3))));
            ResultSetMetaData md = rs.getMetaData();
            types.add(List.of(md.getColumnTypeName(1), md.getColumnTypeName(2), md.getColumnTypeName(3)));
          }
        }
      }
      o.put("rows", rows);
      o.put("types", types);
      return o;
    });
    section("aliceRefused", alice, c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      try (Statement s = c.createStatement()) {
        s.executeQuery("select id from users where ssn = '1'");
        o.put("simple", null);
      } catch (SQLException e) {
        o.put("simple", err(e));
      }
      try (PreparedStatement ps = c.prepareStatement("select id from users where email = ?")) {
        ps.setString(1, "x");
        ps.executeQuery();
        o.put("prepared", null);
      } catch (SQLException e) {
        o.put("prepared", err(e));
      }
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select 1")) {
        rs.next();
        o.put("after", rs.getInt(1));
      }
      return o;
    });
    System.out.println(json(out));
  }

  static Map<String, Object> err(SQLException e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("class", e.getClass().getName());
    m.put("sqlstate", e.getSQLState());
    m.put("message", e.getMessage());
    return m;
  }

  static void section(String name, String url, Section body) {
    try (Connection c = DriverManager.getConnection(url)) {
      out.put(name, body.run(c));
    } catch (Exception e) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("exception", e.getClass().getName());
      m.put("sqlstate", e instanceof SQLException ? ((SQLException) e).getSQLState() : null);
      m.put("text", String.valueOf(e.getMessage()));
      out.put(name, m);
    }
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof Number || v instanceof Boolean) return v.toString();
    if (v instanceof Map) {
      StringBuilder b = new StringBuilder("{");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (b.length() > 1) b.append(',');
        b.append(json(String.valueOf(e.getKey()))).append(':').append(json(e.getValue()));
      }
      return b.append('}').toString();
    }
    if (v instanceof List) {
      StringBuilder b = new StringBuilder("[");
      for (Object x : (List<?>) v) {
        if (b.length() > 1) b.append(',');
        b.append(json(x));
      }
      return b.append(']').toString();
    }
    StringBuilder b = new StringBuilder("\"");
    for (char ch : v.toString().toCharArray()) {
      if (ch == '"' || ch == '\\') b.append('\\').append(ch);
      else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
      else b.append(ch);
    }
    return b.append('"').toString();
  }
}
