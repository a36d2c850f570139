import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * A confirmation as a modal <dialog>: the browser traps focus in it and Escape cancels. `onConfirm` runs only
 * on the confirming button.
 */
export function Confirm(props: { title: string; confirmLabel: string; children?: ComponentChildren; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          props.onConfirm();
        }}
      >
        <h2 id="confirm-title">{props.title}</h2>
        {props.children}
        <div class="actions">
          <button type="button" onClick={props.onCancel}>
            Back
          </button>
          <button type="submit" class="primary">
            {props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
