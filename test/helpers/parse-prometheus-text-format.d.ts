// parse-prometheus-text-format ships no types: its one function and what it returns (prom2json's shape).
declare module "parse-prometheus-text-format" {
  type Labels = Record<string, string>;
  /** A counter's, gauge's or untyped metric's sample. */
  interface ValueSample {
    value: string;
    labels?: Labels;
    timestamp_ms?: string;
  }
  /**
   * A histogram's series: its buckets by upper bound (le), count and sum. (When `le` comes before a series'
   * other labels, the parser files the buckets apart from the count and sum: then each has only its part.)
   */
  interface HistogramSample {
    buckets: Record<string, string>;
    count?: string;
    sum?: string;
    labels?: Labels;
  }
  /** A summary's series: its quantiles, count and sum. */
  interface SummarySample {
    quantiles?: Record<string, string>;
    count: string;
    sum: string;
    labels?: Labels;
  }
  export interface MetricFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: (ValueSample | HistogramSample | SummarySample)[];
  }
  /** Parse the Prometheus text exposition format; throws on a line the grammar does not allow. */
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
