import { Link, Route, Router, Switch } from 'wouter-preact';
import { DeadLetters } from './pages/DeadLetters';
import { Overview } from './pages/Overview';
import { RunDetail } from './pages/RunDetail';
import { Schedules } from './pages/Schedules';
import { Runs } from './pages/Runs';
import { Workers } from './pages/Workers';
import { Workflows } from './pages/Workflows';
import { TokenGate } from './TokenGate';

const PAGES = [
  ['/', 'Overview'],
  ['/runs', 'Runs'],
  ['/workflows', 'Workflows'],
  ['/schedules', 'Schedules'],
  ['/workers', 'Workers'],
  ['/dead-letters', 'Dead letters'],
] as const;

/** The dashboard: served at /ui, every path below it routed here (the coordinator answers index.html for them). */
export function App() {
  return (
    <Router base="/ui">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">nest-durable</span>
        <nav aria-label="Dashboard pages">
          {PAGES.map(([href, label]) => (
            <Link key={href} href={href} className={(active: boolean) => (active ? 'active' : '')}>
              {label}
            </Link>
          ))}
        </nav>
      </header>
      <main id="main">
        <TokenGate>
          <Switch>
            <Route path="/" component={Overview} />
            <Route path="/runs" component={Runs} />
            {/* Keyed by the id: another run's page (a child's, a parent's) starts afresh, nothing of this run's shown under its address. */}
            <Route path="/runs/:id">{(params: { id: string }) => <RunDetail key={params.id} id={params.id} />}</Route>
            <Route path="/workflows" component={Workflows} />
            <Route path="/schedules" component={Schedules} />
            <Route path="/workers" component={Workers} />
            <Route path="/dead-letters" component={DeadLetters} />
            <Route>
              <h1>Not found</h1>
              <p>
                No such page. <Link href="/">Go to the overview.</Link>
              </p>
            </Route>
          </Switch>
        </TokenGate>
      </main>
    </Router>
  );
}
