import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Stats } from '@nest-durable/common';

const HEIGHT = 220;

/** Runs started and finished per minute (uPlot draws on a canvas; its label gives the window's totals to a screen reader). */
export function ThroughputChart({ throughput }: { throughput: Stats['throughput'] }) {
  const host = useRef<HTMLDivElement>(null);
  const total = (series: 'started' | 'finished') => throughput.reduce((sum, point) => sum + point[series], 0);
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
        height: HEIGHT,
        // The legend names the lines; the values per minute show on hover over the chart.
        legend: { live: true },
        series: [
          {},
          { label: 'started', stroke: '#2563eb', width: 2, points: { show: false } },
          { label: 'finished', stroke: '#16a34a', width: 2, dash: [6, 3], points: { show: false } },
        ],
        // Whole runs: ticks at integer steps only.
        axes: [{}, { label: 'runs / minute', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000] }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      },
      data,
      host.current,
    );
    const resize = () => host.current && chart.setSize({ width: host.current.clientWidth, height: HEIGHT });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [throughput]);
  return (
    <div class="chart">
      <div
        ref={host}
        role="img"
        aria-label={`Runs started and finished per minute: ${total('started')} started, ${total('finished')} finished in the window`}
      />
    </div>
  );
}
