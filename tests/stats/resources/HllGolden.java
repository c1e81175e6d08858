// Golden-vector generator for Hive's HyperLogLog (org.apache.hadoop.hive.common.ndv.hll, Hive >= 3).
//
// pyspark ships Hive 2.3.10, which predates these classes, so this program is NOT run by the tests. It was
// run once against Hive's HLL classes (with Murmur3 from hive-storage-api) to produce hll_golden.txt:
//   javac -cp <hive hll classes>:hive-storage-api.jar HllGolden.java
//   java -cp .:<hive hll classes>:hive-storage-api.jar HllGolden hll_cases.txt > hll_golden.txt
// The test test_hll.py::test_hive_golden_vectors runs the same case programs in Python and compares.
//
// Case program (one per line, "#" comments): <name> <op> <op> ... evaluated on a stack of sketches:
//   new:P          push an empty sketch with p=P            newnp:P   same, bit packing disabled
//   long:S:N:K     add longs S, S+K, ... (N values)         str:X:S:N add UTF-8 strings X+S .. X+(S+N-1)
//   dbl:S:N:F      add doubles (S+i)*F, i < N               merge     pop b; top.merge(b)
//   squash:P       top = top.squash(P)                      ser       top = deserialize(serialize(top))
// Output per case: "<name> <estimate> <bytes>" where bytes is hex, or sha256:<hex>:<length> past 400 bytes.
import java.io.BufferedReader;
import java.io.FileReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.Deque;

import org.apache.hadoop.hive.common.ndv.hll.HyperLogLog;
import org.apache.hadoop.hive.common.ndv.hll.HyperLogLogUtils;

public class HllGolden {
  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }

  public static void main(String[] args) throws Exception {
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      String line;
      while ((line = in.readLine()) != null) {
        line = line.trim();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        String[] tokens = line.split("\\s+");
        Deque<HyperLogLog> stack = new ArrayDeque<>();
        for (int t = 1; t < tokens.length; t++) {
          String[] op = tokens[t].split(":", -1);
          switch (op[0]) {
            case "new":
              stack.push(HyperLogLog.builder().setNumRegisterIndexBits(Integer.parseInt(op[1])).build());
              break;
            case "newnp":
              stack.push(HyperLogLog.builder().setNumRegisterIndexBits(Integer.parseInt(op[1]))
                  .enableBitPacking(false).build());
              break;
            case "long": {
              long s = Long.parseLong(op[1]);
              long n = Long.parseLong(op[2]);
              long k = Long.parseLong(op[3]);
              for (long i = 0; i < n; i++) {
                stack.peek().addLong(s + i * k);
              }
              break;
            }
            case "str": {
              long s = Long.parseLong(op[2]);
              long n = Long.parseLong(op[3]);
              for (long i = s; i < s + n; i++) {
                stack.peek().addBytes((op[1] + i).getBytes(StandardCharsets.UTF_8));
              }
              break;
            }
            case "dbl": {
              long s = Long.parseLong(op[1]);
              long n = Long.parseLong(op[2]);
              double f = Double.parseDouble(op[3]);
              for (long i = 0; i < n; i++) {
                stack.peek().addDouble((s + i) * f);
              }
              break;
            }
            case "merge": {
              HyperLogLog b = stack.pop();
              stack.peek().merge(b);
              break;
            }
            case "squash":
              stack.push(stack.pop().squash(Integer.parseInt(op[1])));
              break;
            case "ser":
              stack.push(HyperLogLogUtils.deserializeHLL(stack.pop().serialize()));
              break;
            default:
              throw new IllegalArgumentException("unknown op " + tokens[t]);
          }
        }
        HyperLogLog top = stack.peek();
        byte[] bytes = top.serialize();
        String encoded = bytes.length > 400
            ? "sha256:" + hex(MessageDigest.getInstance("SHA-256").digest(bytes)) + ":" + bytes.length
            : hex(bytes);
        System.out.println(tokens[0] + " " + top.estimateNumDistinctValues() + " " + encoded);
      }
    }
  }
}
