// Test oracle for FM sketches, using Hive 2.3's Flajolet-Martin estimator from pyspark's hive-exec jar
// (the same bit vectors, hashing and estimate as Hive 3/4's FMSketch, which only changed the serialization).
// Input lines: "<numVectors> <start> <count> <step>" for one sketch, or with "+ <start> <count> <step>"
// appended to merge a second sketch into the first.
// Output lines: "<estimate of the first> <estimate after merge or -1> <v0> <v1> ..." where vi are the first
// sketch's bit vectors (before merging) and then the second's, each as a 32-bit integer (bit i = position i).
import java.io.BufferedReader;
import java.io.FileReader;

import org.apache.hadoop.hive.ql.udf.generic.NumDistinctValueEstimator;

public class FmOracle {
  private static NumDistinctValueEstimator build(int n, long start, long count, long step) {
    NumDistinctValueEstimator e = new NumDistinctValueEstimator(n);
    for (long i = 0; i < count; i++) {
      e.addToEstimator(start + i * step);
    }
    return e;
  }

  private static String vectors(NumDistinctValueEstimator e) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < e.getnumBitVectors(); i++) {
      int v = 0;
      for (int pos = 0; pos < 32; pos++) {
        if (e.getBitVector(i).get(pos)) {
          v |= 1 << pos;
        }
      }
      sb.append(' ').append(v);
    }
    return sb.toString();
  }

  public static void main(String[] args) throws Exception {
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] t = line.trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        NumDistinctValueEstimator a = build(n, Long.parseLong(t[1]), Long.parseLong(t[2]), Long.parseLong(t[3]));
        String va = vectors(a);
        long single = a.estimateNumDistinctValues();
        if (t.length > 4) {
          NumDistinctValueEstimator b = build(n, Long.parseLong(t[5]), Long.parseLong(t[6]), Long.parseLong(t[7]));
          String vb = vectors(b);
          a.mergeEstimators(b);
          System.out.println(single + " " + a.estimateNumDistinctValues() + va + vb);
        } else {
          System.out.println(single + " -1" + va);
        }
      }
    }
  }
}
