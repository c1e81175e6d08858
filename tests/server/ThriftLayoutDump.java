import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.meta_data.EnumMetaData;
import org.apache.thrift.meta_data.FieldMetaData;
import org.apache.thrift.meta_data.FieldValueMetaData;
import org.apache.thrift.meta_data.ListMetaData;
import org.apache.thrift.meta_data.MapMetaData;
import org.apache.thrift.meta_data.SetMetaData;
import org.apache.thrift.meta_data.StructMetaData;
import org.apache.thrift.protocol.TType;

/**
 * Prints the wire layout of every Thrift-generated class in the given jars as JSON.
 *
 * Usage: java ThriftLayoutDump OUT.json JAR PACKAGE_PREFIX [JAR PACKAGE_PREFIX ...]
 *
 * Output: {"ClassName": {"field": [id, "type"], ...}, ...}. Nested service classes are
 * named "Service.method_args" / "Service.method_result". Types are written in Thrift IDL
 * spelling with wire-level meaning: enums become i32, binary becomes string (both travel
 * as STRING), structs/unions/exceptions become "struct:Name".
 *
 * Used by tests/server/test_idl.py to compare our IDL with Hive's generated classes.
 */
public final class ThriftLayoutDump {
  private ThriftLayoutDump() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3 || args.length % 2 != 1) {
      System.err.println("usage: ThriftLayoutDump OUT.json JAR PACKAGE_PREFIX [JAR PACKAGE_PREFIX ...]");
      System.exit(2);
    }
    Map<String, Map<String, Object[]>> layouts = new TreeMap<>();
    for (int i = 1; i < args.length; i += 2) {
      dumpJar(new File(args[i]), args[i + 1].replace('.', '/'), layouts);
    }
    try (java.io.Writer out = new java.io.OutputStreamWriter(
        new java.io.FileOutputStream(args[0]), java.nio.charset.StandardCharsets.UTF_8)) {
      out.write(toJson(layouts));
    }
  }

  private static void dumpJar(File jar, String prefix, Map<String, Map<String, Object[]>> layouts)
      throws Exception {
    List<String> names = new ArrayList<>();
    try (JarFile jf = new JarFile(jar)) {
      Enumeration<JarEntry> entries = jf.entries();
      while (entries.hasMoreElements()) {
        String n = entries.nextElement().getName();
        if (n.startsWith(prefix) && n.endsWith(".class")) {
          names.add(n.substring(0, n.length() - ".class".length()).replace('/', '.'));
        }
      }
    }
    Collections.sort(names);
    ClassLoader loader = ThriftLayoutDump.class.getClassLoader();
    for (String name : names) {
      Class<?> cls = Class.forName(name, false, loader);
      Field meta;
      try {
        meta = cls.getField("metaDataMap");
      } catch (NoSuchFieldException e) {
        continue;  // not a generated struct (enums, _Fields, schemes, clients...)
      }
      if (!Modifier.isStatic(meta.getModifiers())) {
        continue;
      }
      @SuppressWarnings("unchecked")
      Map<? extends TFieldIdEnum, FieldMetaData> fields =
          (Map<? extends TFieldIdEnum, FieldMetaData>) meta.get(null);
      Map<String, Object[]> layout = new TreeMap<>();
      for (Map.Entry<? extends TFieldIdEnum, FieldMetaData> e : fields.entrySet()) {
        layout.put(e.getValue().fieldName,
            new Object[] {(int) e.getKey().getThriftFieldId(), typeName(e.getValue().valueMetaData)});
      }
      layouts.put(displayName(cls), layout);
    }
  }

  /** "ThriftHiveMetastore.get_table_args" for nested classes, the simple name otherwise. */
  private static String displayName(Class<?> cls) {
    Class<?> outer = cls.getEnclosingClass();
    return outer == null ? cls.getSimpleName() : outer.getSimpleName() + "." + cls.getSimpleName();
  }

  private static String typeName(FieldValueMetaData v) {
    if (v instanceof StructMetaData) {
      return "struct:" + ((StructMetaData) v).structClass.getSimpleName();
    }
    if (v instanceof ListMetaData) {
      return "list<" + typeName(((ListMetaData) v).elemMetaData) + ">";
    }
    if (v instanceof SetMetaData) {
      return "set<" + typeName(((SetMetaData) v).elemMetaData) + ">";
    }
    if (v instanceof MapMetaData) {
      MapMetaData m = (MapMetaData) v;
      return "map<" + typeName(m.keyMetaData) + "," + typeName(m.valueMetaData) + ">";
    }
    if (v instanceof EnumMetaData) {
      return "i32";
    }
    switch (v.type) {
      case TType.BOOL: return "bool";
      case TType.BYTE: return "i8";
      case TType.DOUBLE: return "double";
      case TType.I16: return "i16";
      case TType.I32: return "i32";
      case TType.I64: return "i64";
      case TType.STRING: return "string";
      case TType.ENUM: return "i32";
      case TType.STRUCT: return "struct:" + v.getTypedefName();  // typedef'd struct without class info
      default: return "ttype" + v.type;
    }
  }

  private static String toJson(Map<String, Map<String, Object[]>> layouts) {
    StringBuilder sb = new StringBuilder("{\n");
    boolean firstClass = true;
    for (Map.Entry<String, Map<String, Object[]>> c : layouts.entrySet()) {
      if (!firstClass) {
        sb.append(",\n");
      }
      firstClass = false;
      sb.append("  ").append(quote(c.getKey())).append(": {");
      boolean firstField = true;
      for (Map.Entry<String, Object[]> f : c.getValue().entrySet()) {
        if (!firstField) {
          sb.append(", ");
        }
        firstField = false;
        sb.append(quote(f.getKey())).append(": [").append(f.getValue()[0]).append(", ")
            .append(quote((String) f.getValue()[1])).append("]");
      }
      sb.append("}");
    }
    return sb.append("\n}\n").toString();
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') {
        sb.append('\\');
      }
      sb.append(ch);
    }
    return sb.append('"').toString();
  }
}
