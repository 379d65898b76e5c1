// The statistics and the output of ElectionBench: percentiles, means and the one JSON line each
// measurement prints on stdout (scripts/bench-curator.py parses it; NaN is written as null).

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

final class BenchReport {
    private BenchReport() {}

    static double pct(List<Double> xs, double q) {
        if (xs.isEmpty()) return Double.NaN;
        List<Double> s = new ArrayList<>(xs);
        Collections.sort(s);
        return s.get(Math.min(s.size() - 1, (int) (q * s.size())));
    }

    static double mean(List<Double> xs) {
        double t = 0;
        for (double x : xs) t += x;
        return xs.isEmpty() ? Double.NaN : t / xs.size();
    }

    static void putStats(Map<String, Object> out, String prefix, List<Double> xs) {
        out.put(prefix + "p50", pct(xs, 0.50));
        out.put(prefix + "p99", pct(xs, 0.99));
        out.put(prefix + "mean", mean(xs));
        out.put(prefix + "min", xs.isEmpty() ? Double.NaN : Collections.min(xs));
        out.put(prefix + "max", xs.isEmpty() ? Double.NaN : Collections.max(xs));
    }

    static String json(Map<String, Object> m) {
        StringBuilder b = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!first) b.append(", ");
            first = false;
            b.append('"').append(e.getKey()).append("\": ");
            Object v = e.getValue();
            if (v instanceof Double) {
                double d = (Double) v;
                b.append(Double.isNaN(d) ? "null" : String.format(Locale.ROOT, "%.4f", d));
            } else if (v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else if (v instanceof List) {
                b.append('[');
                List<?> l = (List<?>) v;
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) b.append(", ");
                    Object x = l.get(i);
                    b.append(x instanceof Double ? String.format(Locale.ROOT, "%.4f", (Double) x) : x);
                }
                b.append(']');
            } else {
                b.append('"').append(String.valueOf(v).replace("\"", "'")).append('"');
            }
        }
        return b.append('}').toString();
    }

    static void emit(Map<String, Object> m) {
        System.out.println(json(m));
        System.out.flush();
    }
}
