// Test oracle for KLL histograms with the Java DataSketches library from pyspark's jars.
// Input lines: "P <hex>" = heapify these bytes, print "<n> <min> <max> <toByteArray hex>";
//              "J <count> <step>" = sketch (k=200) of floats i*step for i < count, print its toByteArray hex.
import java.io.BufferedReader;
import java.io.FileReader;

import org.apache.datasketches.kll.KllFloatsSketch;
import org.apache.datasketches.memory.Memory;

public class KllOracle {
  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }

  private static byte[] unhex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] t = line.trim().split("\\s+");
        if (t[0].equals("P")) {
          KllFloatsSketch s = KllFloatsSketch.heapify(Memory.wrap(unhex(t[1])));
          String min = s.isEmpty() ? "nan" : Float.toString(s.getMinItem());
          String max = s.isEmpty() ? "nan" : Float.toString(s.getMaxItem());
          System.out.println(s.getN() + " " + min + " " + max + " " + hex(s.toByteArray()));
        } else {
          KllFloatsSketch s = KllFloatsSketch.newHeapInstance(200);
          long count = Long.parseLong(t[1]);
          float step = Float.parseFloat(t[2]);
          for (long i = 0; i < count; i++) {
            s.update(i * step);
          }
          System.out.println(hex(s.toByteArray()));
        }
      }
    }
  }
}
