"""The receipt-push receiver (docs/design.md#receipt-push).

The provider POSTs each final receipt to ``/dlr/<secret>``
(docs/provider-contract.md#dlr-push-webhook); the receiver checks it
(``pushes``), stores it in dlr.receipt_push_inbox and answers 2xx only
after the commit (``app``), served by uvicorn (``server``). What a push
means for a message is decided later, by the reconciliation of the inbox.
"""
