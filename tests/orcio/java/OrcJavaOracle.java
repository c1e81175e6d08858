// Test oracle: runs ORC Java's own encoders, hashing and bloom filters (orc-core from pyspark's jars) on
// inputs from the Python tests, one request per stdin line, one answer per stdout line.
//
//   RLE <v2|v1|byte|bool> <signed 0/1> <aligned 0/1> <marks|-> <values|->  ->  <hex> <pos;pos;...>
//   HASH64 <hex>                                                          ->  <signed long>
//   BLOOM <entries> <fpp> <long|double|bytes> <values|->                  ->  <k> <hex of utf8 bitset>
//   DECSUM <decimal,decimal,...>        (HiveDecimalWritable.mutateAdd from 0) ->  <sum text|null>
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import org.apache.orc.OrcProto;
import org.apache.orc.impl.BitFieldWriter;
import org.apache.orc.impl.IntegerWriter;
import org.apache.orc.impl.PositionRecorder;
import org.apache.orc.impl.PositionedOutputStream;
import org.apache.orc.impl.RunLengthByteWriter;
import org.apache.orc.impl.RunLengthIntegerWriter;
import org.apache.orc.impl.RunLengthIntegerWriterV2;
import org.apache.orc.util.BloomFilterIO;
import org.apache.orc.util.BloomFilterUtf8;
import org.apache.orc.util.Murmur3;

public class OrcJavaOracle {
  static final class Bytes extends PositionedOutputStream {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    @Override public void write(int b) { out.write(b); }
    @Override public void write(byte[] b, int off, int len) { out.write(b, off, len); }
    @Override public void getPosition(PositionRecorder recorder) { recorder.addPosition(out.size()); }
    @Override public long getBufferSize() { return out.size(); }
    @Override public void changeIv(Consumer<byte[]> modifier) { }
    @Override public void flush() { }
  }

  static final class Recorder implements PositionRecorder {
    final List<Long> positions = new ArrayList<>();
    @Override public void addPosition(long offset) { positions.add(offset); }
  }

  static long[] longs(String text) {
    if (text.equals("-")) return new long[0];
    String[] parts = text.split(",");
    long[] out = new long[parts.length];
    for (int i = 0; i < parts.length; ++i) out[i] = Long.parseLong(parts[i]);
    return out;
  }

  static String hex(byte[] data) {
    StringBuilder sb = new StringBuilder();
    for (byte b : data) sb.append(String.format("%02x", b & 0xff));
    return sb.length() == 0 ? "-" : sb.toString();
  }

  static byte[] unhex(String text) {
    if (text.equals("-")) return new byte[0];
    byte[] out = new byte[text.length() / 2];
    for (int i = 0; i < out.length; ++i) out[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
    return out;
  }

  static String rle(String[] f) throws IOException {
    String kind = f[1];
    boolean signed = f[2].equals("1");
    boolean aligned = f[3].equals("1");
    long[] marks = longs(f[4]);
    long[] values = longs(f[5]);
    Bytes out = new Bytes();
    List<String> positions = new ArrayList<>();
    int m = 0;
    IntegerWriter ints = null;
    RunLengthByteWriter bytes = null;
    BitFieldWriter bits = null;
    if (kind.equals("v2")) ints = new RunLengthIntegerWriterV2(out, signed, aligned);
    else if (kind.equals("v1")) ints = new RunLengthIntegerWriter(out, signed);
    else if (kind.equals("byte")) bytes = new RunLengthByteWriter(out);
    else bits = new BitFieldWriter(out, 1);
    for (int i = 0; i <= values.length; ++i) {
      while (m < marks.length && marks[m] == i) {
        Recorder r = new Recorder();
        if (ints != null) ints.getPosition(r);
        else if (bytes != null) bytes.getPosition(r);
        else bits.getPosition(r);
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < r.positions.size(); ++k) {
          if (k > 0) sb.append(',');
          sb.append(r.positions.get(k));
        }
        positions.add(sb.toString());
        m++;
      }
      if (i == values.length) break;
      if (ints != null) ints.write(values[i]);
      else if (bytes != null) bytes.write((byte) values[i]);
      else bits.write((int) values[i]);
    }
    if (ints != null) ints.flush();
    else if (bytes != null) bytes.flush();
    else bits.flush();
    return hex(out.out.toByteArray()) + " " + (positions.isEmpty() ? "-" : String.join(";", positions));
  }

  static String bloom(String[] f) {
    BloomFilterUtf8 filter = new BloomFilterUtf8(Long.parseLong(f[1]), Double.parseDouble(f[2]));
    String type = f[3];
    if (!f[4].equals("-")) {
      for (String v : f[4].split(",")) {
        if (type.equals("long")) filter.addLong(Long.parseLong(v));
        else if (type.equals("double")) filter.addDouble(Double.longBitsToDouble(Long.parseLong(v)));
        else filter.addBytes(unhex(v), 0, unhex(v).length);
      }
    }
    OrcProto.BloomFilter.Builder builder = OrcProto.BloomFilter.newBuilder();
    BloomFilterIO.serialize(builder, filter);
    return builder.getNumHashFunctions() + " " + hex(builder.getUtf8Bitset().toByteArray());
  }

  static String decimalSum(String values) {
    org.apache.hadoop.hive.serde2.io.HiveDecimalWritable sum =
        new org.apache.hadoop.hive.serde2.io.HiveDecimalWritable(0);
    for (String v : values.split(",")) {
      if (sum.isSet()) sum.mutateAdd(new org.apache.hadoop.hive.serde2.io.HiveDecimalWritable(v));
    }
    return sum.isSet() ? sum.toString() : "null";
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"), 1 << 20);
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) continue;
      String[] f = line.split(" ");
      try {
        switch (f[0]) {
          case "RLE": out.println(rle(f)); break;
          case "HASH64": byte[] d = unhex(f[1]); out.println(Murmur3.hash64(d, 0, d.length)); break;
          case "BLOOM": out.println(bloom(f)); break;
          case "DECSUM": out.println(decimalSum(f[1])); break;
          default: out.println("ERROR unknown request " + f[0]);
        }
      } catch (Exception e) {
        out.println("ERROR " + e);
      }
    }
    out.flush();
  }
}
