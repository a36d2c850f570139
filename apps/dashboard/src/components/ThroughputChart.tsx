import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { StatsView } from '../types';

/** Runs started and finished per minute (uPlot draws on a canvas; the numbers are also in the table beside it). */
export function ThroughputChart({ throughput }: { throughput: StatsView['throughput'] }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!host.current) return;
    const data: uPlot.AlignedData = [
      throughput.map((point) => Date.parse(point.minute) / 1000),
      throughput.map((point) => point.started),
      throughput.map((point) => point.finished),
    ];
    const chart = new uPlot(
      {
        width: host.current.clientWidth || 600,
        height: 220,
        series: [{}, { label: 'started', stroke: '#2563eb', width: 2 }, { label: 'finished', stroke: '#16a34a', width: 2 }],
        axes: [{}, { label: 'runs / minute' }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      },
      data,
      host.current,
    );
    const resize = () => host.current && chart.setSize({ width: host.current.clientWidth, height: 220 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [throughput]);
  return <div ref={host} class="chart" role="img" aria-label="Runs started and finished per minute" />;
}
