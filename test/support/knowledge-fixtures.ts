/** A small Markdown policy the knowledge tests ingest: three sections, three chunks, each answering one question. */
export const refundPolicy = `# Refund policy

## Deadlines
Refunds are accepted within 30 days of purchase. After 30 days we offer store credit instead.

## Shipping costs
Shipping costs are refunded only when the item arrived damaged.

# Opening hours
Our support desk is open Monday to Friday, 9:00 to 17:00 Central European Time.`;
